//! Network grant patterns: what an operator grants and what a plugin asks
//! for, in one syntax.
//!
//! ```text
//! api.example.com          the host, any port
//! api.example.com:443      the host, one port
//! *.example.com            any subdomain at any depth, not example.com itself
//! https://api.example.com  HTTPS only, port 443 unless one is given
//! 203.0.113.7:8080         an IP address (IPv6 in brackets: [2001:db8::1]:443)
//! 10.1.0.0/16              a CIDR block
//! insecure:allow-all       every host (the address rules still apply)
//! ```

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::NetError;
use super::host::{self, Host};

/// The spelling of "every host".
pub const ALLOW_ALL: &str = "insecure:allow-all";

/// A URL scheme an HTTP grant may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn parse(s: &str) -> Option<Scheme> {
        match s.to_ascii_lowercase().as_str() {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// An IP network: the address with its host bits cleared, and a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    fn parse(addr: &str, prefix: &str) -> Result<Cidr, String> {
        let addr = match Host::parse(addr).map_err(|e| e.to_string())? {
            Host::Ip(ip) => ip,
            Host::Name(_) => return Err("a CIDR block needs an IP address".into()),
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= max)
            .ok_or_else(|| format!("the prefix must be 0 to {max}"))?;
        if prefix == 0 {
            return Err(format!(
                "a /0 block is every address: spell it `{ALLOW_ALL}`"
            ));
        }
        let cidr = Cidr { addr, prefix };
        Ok(Cidr {
            addr: cidr.network(),
            prefix,
        })
    }

    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(v4) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4((u32::from(v4) & mask).into())
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
        }
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = host::canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                Cidr { addr: ip, ..*self }.network() == self.addr
            }
            _ => false,
        }
    }

    /// Whether every address of `other` is in `self`.
    pub fn covers(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains(other.addr)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Which hosts a pattern names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostMatch {
    /// Exactly this DNS name.
    Name(String),
    /// Any name strictly below this domain (`*.example.com`).
    Subdomains(String),
    Ip(IpAddr),
    Cidr(Cidr),
}

impl HostMatch {
    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (HostMatch::Name(n), Host::Name(h)) => n == h,
            (HostMatch::Subdomains(d), Host::Name(h)) => is_below(h, d),
            (HostMatch::Ip(ip), Host::Ip(h)) => ip == h,
            (HostMatch::Cidr(c), Host::Ip(h)) => c.contains(*h),
            _ => false,
        }
    }

    /// Whether this names IP addresses (an address or a block) rather
    /// than DNS names: only such a grant may reach a non-public address.
    pub fn names_addresses(&self) -> bool {
        matches!(self, HostMatch::Ip(_) | HostMatch::Cidr(_))
    }

    /// The narrower of two host matches, if they overlap in a way the
    /// syntax can express.
    fn meet(&self, other: &HostMatch) -> Option<HostMatch> {
        use HostMatch::{Cidr as C, Ip, Name, Subdomains as S};
        match (self, other) {
            (Name(a), Name(b)) if a == b => Some(Name(a.clone())),
            (Name(n), S(d)) | (S(d), Name(n)) if is_below(n, d) => Some(Name(n.clone())),
            (S(a), S(b)) if a == b || is_below(a, b) => Some(S(a.clone())),
            (S(a), S(b)) if is_below(b, a) => Some(S(b.clone())),
            (Ip(a), Ip(b)) if a == b => Some(Ip(*a)),
            (Ip(ip), C(c)) | (C(c), Ip(ip)) if c.contains(*ip) => Some(Ip(*ip)),
            (C(a), C(b)) if a.covers(b) => Some(C(*b)),
            (C(a), C(b)) if b.covers(a) => Some(C(*a)),
            _ => None,
        }
    }
}

fn is_below(name: &str, domain: &str) -> bool {
    name.len() > domain.len() + 1
        && name.ends_with(domain)
        && name.as_bytes()[name.len() - domain.len() - 1] == b'.'
}

impl fmt::Display for HostMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostMatch::Name(n) => f.write_str(n),
            HostMatch::Subdomains(d) => write!(f, "*.{d}"),
            HostMatch::Ip(ip) => write!(f, "{}", Host::Ip(*ip)),
            HostMatch::Cidr(c) => write!(f, "{c}"),
        }
    }
}

/// One network grant (or request).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NetPattern {
    /// `insecure:allow-all`: every host; the address rules still apply.
    AllowAll,
    Host {
        /// HTTP only, and only this scheme; `None`: HTTP and raw sockets.
        scheme: Option<Scheme>,
        host: HostMatch,
        /// `None`: any port.
        port: Option<u16>,
    },
}

impl NetPattern {
    /// Whether the pattern admits `host:port`, reached over `scheme`
    /// (`None` for a raw socket).
    pub fn matches(&self, scheme: Option<Scheme>, host: &Host, port: u16) -> bool {
        match self {
            NetPattern::AllowAll => true,
            NetPattern::Host {
                scheme: s,
                host: h,
                port: p,
            } => {
                s.is_none_or(|s| Some(s) == scheme)
                    && p.is_none_or(|p| p == port)
                    && h.matches(host)
            }
        }
    }

    /// The pattern admitting exactly what both admit, when the syntax can
    /// say it (a name and an address never meet: which addresses a name
    /// has is not known until it is resolved).
    pub fn meet(&self, other: &NetPattern) -> Option<NetPattern> {
        match (self, other) {
            (NetPattern::AllowAll, p) | (p, NetPattern::AllowAll) => Some(p.clone()),
            (
                NetPattern::Host {
                    scheme: s1,
                    host: h1,
                    port: p1,
                },
                NetPattern::Host {
                    scheme: s2,
                    host: h2,
                    port: p2,
                },
            ) => Some(NetPattern::Host {
                scheme: meet_opt(*s1, *s2)?,
                host: h1.meet(h2)?,
                port: meet_opt(*p1, *p2)?,
            }),
        }
    }

    /// Whether everything `other` admits, `self` admits too.
    pub fn covers(&self, other: &NetPattern) -> bool {
        self.meet(other).as_ref() == Some(other)
    }
}

/// `None` is "any": the meet of two constraints, `None` if they conflict.
fn meet_opt<T: PartialEq + Copy>(a: Option<T>, b: Option<T>) -> Option<Option<T>> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => None,
        (Some(x), _) | (_, Some(x)) => Some(Some(x)),
        (None, None) => Some(None),
    }
}

impl FromStr for NetPattern {
    type Err = NetError;

    fn from_str(text: &str) -> Result<NetPattern, NetError> {
        let bad = |reason: String| NetError::InvalidPattern {
            pattern: text.to_owned(),
            reason,
        };
        let t = text.trim();
        if t == ALLOW_ALL {
            return Ok(NetPattern::AllowAll);
        }
        if t == "*" || t.eq_ignore_ascii_case("all") || t.starts_with("insecure:") {
            return Err(bad(format!("to allow every host, write `{ALLOW_ALL}`")));
        }
        let (scheme, rest) = match t.split_once("://") {
            Some((s, rest)) => (
                Some(Scheme::parse(s).ok_or_else(|| {
                    bad(format!("unknown scheme `{s}` (expected http or https)"))
                })?),
                rest,
            ),
            None => (None, t),
        };
        if rest.contains(['@', '?', '#', '\\']) || rest.matches('/').count() > 1 {
            return Err(bad(
                "a pattern is a host, not a URL: no path, user or query".into(),
            ));
        }
        let (host, port) = if let Some((addr, rest)) = rest.split_once('/') {
            let (prefix, port) = match rest.split_once(':') {
                Some((prefix, port)) => (prefix, Some(parse_port(port).map_err(bad)?)),
                None => (rest, None),
            };
            let addr = addr.trim_start_matches('[').trim_end_matches(']');
            (
                HostMatch::Cidr(Cidr::parse(addr, prefix).map_err(bad)?),
                port,
            )
        } else {
            let (host_part, port) = split_port(rest).map_err(bad)?;
            (host_match(host_part).map_err(bad)?, port)
        };
        let port = port.or(scheme.map(Scheme::default_port));
        Ok(NetPattern::Host { scheme, host, port })
    }
}

fn host_match(host_part: &str) -> Result<HostMatch, String> {
    if let Some(domain) = host_part.strip_prefix("*.") {
        return match Host::parse(domain).map_err(|e| e.to_string())? {
            Host::Name(d) if d.contains('.') || d == "localhost" => Ok(HostMatch::Subdomains(d)),
            Host::Name(d) => Err(format!(
                "`*.{d}` would cover a whole top-level domain; name a registered domain"
            )),
            Host::Ip(_) => Err("`*.` needs a domain name".into()),
        };
    }
    if host_part.contains('*') {
        return Err("`*` is allowed only as a leading `*.` label (e.g. `*.example.com`)".into());
    }
    Ok(match Host::parse(host_part).map_err(|e| e.to_string())? {
        Host::Name(n) => HostMatch::Name(n),
        Host::Ip(ip) => HostMatch::Ip(ip),
    })
}

fn parse_port(p: &str) -> Result<u16, String> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{p}` is not a port"));
    }
    p.parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("`{p}` is not a port (1 to 65535)"))
}

/// `host[:port]`, `[v6][:port]`, or a bare IPv6 literal.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    if text.starts_with('[') {
        let close = text.find(']').ok_or("unclosed `[`")?;
        let (host, rest) = text.split_at(close + 1);
        return match rest.strip_prefix(':') {
            Some(p) => Ok((host, Some(parse_port(p)?))),
            None if rest.is_empty() => Ok((text, None)),
            None => Err(format!("unexpected `{rest}` after the address")),
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, port) = text.split_once(':').ok_or("missing port")?;
            Ok((host, Some(parse_port(port)?)))
        }
        // A bare IPv6 address or block: no port (use brackets for one).
        _ => Ok((text, None)),
    }
}

impl fmt::Display for NetPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetPattern::AllowAll => f.write_str(ALLOW_ALL),
            NetPattern::Host { scheme, host, port } => {
                if let Some(s) = scheme {
                    write!(f, "{}://", s.as_str())?;
                }
                match (host, port) {
                    (h, Some(p)) => write!(f, "{h}:{p}"),
                    (h, None) => write!(f, "{h}"),
                }
            }
        }
    }
}

impl Serialize for NetPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NetPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
