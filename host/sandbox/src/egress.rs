//! The egress allowlist of a container whose grants name host:port pairs.
//!
//! Attack: a sandboxed command talking to anything but what it was granted
//! — the host's own services on the bridge gateway, other containers, the
//! operator's network, cloud metadata, the internet — to exfiltrate data
//! or pivot. Mechanism: the container joins Docker's bridge, and before
//! any call runs, a short-lived firewall container joins the sandbox's
//! network namespace (`network_mode: container:<id>`) holding only
//! CAP_NET_ADMIN, installs the rules below, and exits. In that namespace
//! OUTPUT is default-drop: loopback, replies to established flows, and TCP
//! to each granted address (and port) are accepted; everything else is
//! rejected at once (so a refused connect fails fast instead of hanging).
//! INPUT admits only loopback and replies. The sandbox itself has no
//! capabilities, so it cannot change the rules; DNS is not allowed (names
//! in grants are resolved by the host and pinned in /etc/hosts), so DNS
//! cannot be used as a tunnel either.

use std::fmt::Write as _;

use crate::spec::EgressRule;

/// A POSIX shell script installing the allowlist with iptables (IPv4) and
/// ip6tables (IPv6). It uses the nftables-backed tools when they work in
/// the namespace and the legacy ones otherwise; any failing command fails
/// the script, and the caller then refuses to run the call.
pub fn firewall_script(rules: &[EgressRule]) -> String {
    let mut s = head();
    grants(&mut s, rules, "-A OUTPUT");
    for v in ["$V4", "$V6"] {
        let _ = writeln!(s, "{v} -A OUTPUT -p tcp -j REJECT --reject-with tcp-reset");
        let _ = writeln!(s, "{v} -A OUTPUT -j REJECT");
    }
    s
}

/// The script for `insecure:allow-all`: public addresses are reachable,
/// and so are the addresses `rules` name (IP and CIDR grants) and DNS to
/// the container's configured resolvers; every non-public block —
/// loopback beyond the container's own, private, link-local and cloud
/// metadata, CGNAT, the bridge gateway and other containers, their IPv6
/// equivalents and the IPv6 forms that carry an IPv4 address — is
/// rejected, as for WASM tools.
pub fn public_script(rules: &[EgressRule]) -> String {
    let mut s = head();
    grants(&mut s, rules, "-A OUTPUT");
    s.push_str(
        "for ns in $(awk '/^nameserver/ { print $2 }' /etc/resolv.conf); do\n\
         \x20 case \"$ns\" in *:*) v=$V6 ;; *) v=$V4 ;; esac\n\
         \x20 for p in udp tcp; do $v -A OUTPUT -p $p -d \"$ns\" --dport 53 -j ACCEPT; done\n\
         done\n",
    );
    for (net, prefix) in warden_api::net::non_public_blocks() {
        let v = if net.is_ipv4() { "$V4" } else { "$V6" };
        let _ = writeln!(s, "{v} -A OUTPUT -d {net}/{prefix} -j REJECT");
    }
    for v in ["$V4", "$V6"] {
        let _ = writeln!(s, "{v} -A OUTPUT -j ACCEPT");
    }
    s
}

/// The grants of a network operation, added at use time to a standby
/// container fenced by [`firewall_script`] with no grants (see
/// [`crate::sandbox`]'s standby): each inserted at the top of OUTPUT,
/// so ahead of the final reject. Nothing is removed or loosened.
pub fn grant_script(rules: &[EgressRule]) -> String {
    let mut s = pick();
    grants(&mut s, rules, "-I OUTPUT 1");
    s
}

/// The tools: the nftables-backed ones when they work in the namespace,
/// the legacy ones otherwise.
fn pick() -> String {
    String::from(
        "set -eu\n\
         pick() { if $1 -S >/dev/null 2>&1; then echo $1; else echo $2; fi; }\n\
         V4=$(pick iptables iptables-legacy)\n\
         V6=$(pick ip6tables ip6tables-legacy)\n",
    )
}

/// Default-drop in both directions, loopback and replies accepted.
fn head() -> String {
    let mut s = pick();
    for v in ["$V4", "$V6"] {
        let _ = writeln!(s, "{v} -P OUTPUT DROP");
        let _ = writeln!(s, "{v} -P INPUT DROP");
        let _ = writeln!(s, "{v} -A OUTPUT -o lo -j ACCEPT");
        let _ = writeln!(s, "{v} -A INPUT -i lo -j ACCEPT");
        let _ = writeln!(
            s,
            "{v} -A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT"
        );
        let _ = writeln!(
            s,
            "{v} -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT"
        );
    }
    s
}

/// TCP to each granted address (and port).
fn grants(s: &mut String, rules: &[EgressRule], chain: &str) {
    for rule in rules {
        let v = if rule.net.addr.is_ipv4() {
            "$V4"
        } else {
            "$V6"
        };
        // Addresses and ports are typed values: nothing here comes from a
        // string a caller could shape into shell syntax.
        let _ = write!(s, "{v} {chain} -p tcp -d {}", rule.net);
        if let Some(port) = rule.port {
            let _ = write!(s, " --dport {port}");
        }
        s.push_str(" -j ACCEPT\n");
    }
}

#[cfg(test)]
mod tests {
    use warden_api::net::Cidr;

    use super::*;

    #[test]
    fn default_drop_then_only_granted_pairs() {
        let rules = [
            EgressRule {
                net: Cidr {
                    addr: "172.17.0.1".parse().unwrap(),
                    prefix: 32,
                },
                port: Some(8080),
            },
            EgressRule {
                net: Cidr {
                    addr: "fd00::".parse().unwrap(),
                    prefix: 64,
                },
                port: None,
            },
        ];
        let s = firewall_script(&rules);
        assert!(s.contains("$V4 -P OUTPUT DROP"));
        assert!(s.contains("$V6 -P OUTPUT DROP"));
        assert!(s.contains("$V4 -A OUTPUT -p tcp -d 172.17.0.1/32 --dport 8080 -j ACCEPT"));
        assert!(s.contains("$V6 -A OUTPUT -p tcp -d fd00::/64 -j ACCEPT"));
        let accept = s.find("--dport 8080 -j ACCEPT").unwrap();
        let reject = s.find("-j REJECT --reject-with tcp-reset").unwrap();
        assert!(accept < reject, "grants come before the final reject");
        assert!(!s.contains("--dport 53"), "no DNS");
    }

    #[test]
    fn a_standby_gets_exactly_its_grants_ahead_of_the_reject() {
        let rules = [EgressRule {
            net: Cidr {
                addr: "172.17.0.1".parse().unwrap(),
                prefix: 32,
            },
            port: Some(8080),
        }];
        let s = grant_script(&rules);
        assert!(s.contains("$V4 -I OUTPUT 1 -p tcp -d 172.17.0.1/32 --dport 8080 -j ACCEPT"));
        assert_eq!(s.matches("-j ").count(), 1, "one grant, nothing else: {s}");
        assert!(!s.contains("-P "), "the policies stay: {s}");
    }

    #[test]
    fn allow_all_reaches_public_addresses_only() {
        let granted = EgressRule {
            net: Cidr {
                addr: "10.1.2.3".parse().unwrap(),
                prefix: 32,
            },
            port: Some(5432),
        };
        let s = public_script(&[granted]);
        let accept = s.find("-d 10.1.2.3/32 --dport 5432 -j ACCEPT").unwrap();
        for block in [
            "$V4 -A OUTPUT -d 10.0.0.0/8 -j REJECT",
            "$V4 -A OUTPUT -d 172.16.0.0/12 -j REJECT",
            "$V4 -A OUTPUT -d 169.254.169.254/32 -j REJECT",
            "$V4 -A OUTPUT -d 100.64.0.0/10 -j REJECT",
            "$V6 -A OUTPUT -d fc00::/7 -j REJECT",
            "$V6 -A OUTPUT -d ::ffff:0.0.0.0/96 -j REJECT",
        ] {
            let at = s.find(block).unwrap_or_else(|| panic!("{block} in {s}"));
            assert!(accept < at, "a granted address comes first");
        }
        let last = s.rfind("-A OUTPUT -j ACCEPT").unwrap();
        assert!(s.rfind("-j REJECT").unwrap() < last, "public last");
    }
}
