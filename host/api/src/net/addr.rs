//! Which IP addresses are not on the public internet.
//!
//! Attack: server-side request forgery. A tool asked to fetch a URL is
//! pointed at the host's own services (loopback), the operator's network
//! (private, unique-local, CGNAT), link-local services such as the cloud
//! metadata endpoint (169.254.169.254, fd00:ec2::254, which hands out
//! credentials), or at the same addresses dressed up as IPv6
//! (`::ffff:127.0.0.1`, NAT64 `64:ff9b::7f00:1`, 6to4 `2002:7f00:1::`).
//! Every such address is refused unless a grant names it; embedded IPv4
//! addresses are judged as the IPv4 address they carry.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    CloudMetadata,
    UniqueLocal,
    SharedCgnat,
    Multicast,
    Broadcast,
    Documentation,
    Reserved,
}

impl AddressClass {
    pub fn as_str(self) -> &'static str {
        match self {
            AddressClass::Unspecified => "unspecified",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::LinkLocal => "link-local",
            AddressClass::CloudMetadata => "cloud metadata",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::SharedCgnat => "shared (CGNAT)",
            AddressClass::Multicast => "multicast",
            AddressClass::Broadcast => "broadcast",
            AddressClass::Documentation => "documentation",
            AddressClass::Reserved => "reserved",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `None` for a public address; otherwise the class that makes it
/// non-public.
pub fn classify(ip: IpAddr) -> Option<AddressClass> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

/// The non-public IPv4 blocks, most specific first.
const V4_BLOCKS: &[([u8; 4], u32, AddressClass)] = &[
    ([169, 254, 169, 254], 32, AddressClass::CloudMetadata),
    ([255, 255, 255, 255], 32, AddressClass::Broadcast),
    ([0, 0, 0, 0], 8, AddressClass::Unspecified),
    ([127, 0, 0, 0], 8, AddressClass::Loopback),
    ([10, 0, 0, 0], 8, AddressClass::Private),
    ([172, 16, 0, 0], 12, AddressClass::Private),
    ([192, 168, 0, 0], 16, AddressClass::Private),
    ([100, 64, 0, 0], 10, AddressClass::SharedCgnat),
    ([169, 254, 0, 0], 16, AddressClass::LinkLocal),
    ([192, 0, 0, 0], 24, AddressClass::Reserved),
    ([192, 0, 2, 0], 24, AddressClass::Documentation),
    ([198, 51, 100, 0], 24, AddressClass::Documentation),
    ([203, 0, 113, 0], 24, AddressClass::Documentation),
    ([198, 18, 0, 0], 15, AddressClass::Reserved),
    ([192, 88, 99, 0], 24, AddressClass::Reserved),
    ([224, 0, 0, 0], 4, AddressClass::Multicast),
    ([240, 0, 0, 0], 4, AddressClass::Reserved),
];

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    V4_BLOCKS
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, class)| *class)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

const fn v6(segments: [u16; 8]) -> Ipv6Addr {
    Ipv6Addr::new(
        segments[0],
        segments[1],
        segments[2],
        segments[3],
        segments[4],
        segments[5],
        segments[6],
        segments[7],
    )
}

/// The IPv4 address an IPv6 address carries, for the forms that route to
/// it: IPv4-compatible `::a.b.c.d`, NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`)
/// and 6to4 (`2002:AABB:CCDD::/48`).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return Some(mapped);
    }
    if bits >> 32 == 0 && bits > 1 {
        return Some(low32);
    }
    if in_v6(ip, v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]), 96)
        || in_v6(ip, v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]), 48)
    {
        return Some(low32);
    }
    if in_v6(ip, v6([0x2002, 0, 0, 0, 0, 0, 0, 0]), 16) {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

/// The non-public IPv6 blocks besides loopback, unspecified and the forms
/// that carry an IPv4 address.
const V6_BLOCKS: &[(Ipv6Addr, u32, AddressClass)] = &[
    (
        v6([0xff00, 0, 0, 0, 0, 0, 0, 0]),
        8,
        AddressClass::Multicast,
    ),
    (
        v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]),
        10,
        AddressClass::LinkLocal,
    ),
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0]), 10, AddressClass::Private),
    (
        v6([0xfc00, 0, 0, 0, 0, 0, 0, 0]),
        7,
        AddressClass::UniqueLocal,
    ),
    (
        v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]),
        32,
        AddressClass::Documentation,
    ),
    (
        v6([0x3fff, 0, 0, 0, 0, 0, 0, 0]),
        20,
        AddressClass::Documentation,
    ),
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0]), 64, AddressClass::Reserved),
    // IETF protocol assignments, Teredo (2001::/32) and benchmarking
    // (2001:2::/48) included: none is an ordinary public host.
    (
        v6([0x2001, 0, 0, 0, 0, 0, 0, 0]),
        23,
        AddressClass::Reserved,
    ),
];

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    use AddressClass as C;
    if ip == v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254]) {
        return Some(C::CloudMetadata);
    }
    if ip.is_unspecified() {
        return Some(C::Unspecified);
    }
    if ip.is_loopback() {
        return Some(C::Loopback);
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    V6_BLOCKS
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
        .map(|(_, _, class)| *class)
}

/// Every non-public block, as address and prefix length: what a filter
/// that admits only public addresses rejects (IPv6 forms that carry an
/// IPv4 address — mapped, compatible, NAT64, 6to4 — included whole).
pub fn non_public_blocks() -> Vec<(IpAddr, u8)> {
    let v4 = V4_BLOCKS
        .iter()
        .map(|(net, prefix, _)| (IpAddr::V4(Ipv4Addr::from(*net)), *prefix as u8));
    let carriers = [
        (v6([0, 0, 0, 0, 0, 0, 0, 0]), 96),
        (v6([0, 0, 0, 0, 0, 0xffff, 0, 0]), 96),
        (v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]), 96),
        (v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]), 48),
        (v6([0x2002, 0, 0, 0, 0, 0, 0, 0]), 16),
        (Ipv6Addr::LOCALHOST, 128),
    ];
    let v6 = carriers
        .into_iter()
        .chain(V6_BLOCKS.iter().map(|(net, prefix, _)| (*net, *prefix)))
        .map(|(net, prefix)| (IpAddr::V6(net), prefix as u8));
    v4.chain(v6).collect()
}

#[cfg(test)]
mod block_tests {
    use super::*;

    #[test]
    fn every_block_is_non_public_and_public_addresses_are_in_none() {
        for (net, _) in non_public_blocks() {
            assert!(classify(net).is_some(), "{net} is in a non-public block");
        }
        let inside = |ip: IpAddr| {
            non_public_blocks()
                .iter()
                .any(|(net, prefix)| match (ip, net) {
                    (IpAddr::V4(a), IpAddr::V4(n)) => in_v4(a, n.octets(), u32::from(*prefix)),
                    (IpAddr::V6(a), IpAddr::V6(n)) => in_v6(a, *n, u32::from(*prefix)),
                    _ => false,
                })
        };
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(!inside(public.parse().unwrap()), "{public}");
        }
        for private in [
            "172.17.0.1",
            "169.254.169.254",
            "::1",
            "::ffff:10.0.0.1",
            "fd00::1",
        ] {
            assert!(inside(private.parse().unwrap()), "{private}");
        }
    }
}
