//! A call's effective network grant: what the operator granted met with
//! what the plugin asked for, and the checks every connection and request
//! goes through.
//!
//! Attack: a plugin reaching hosts nobody granted it, or reaching the
//! host's own network through a granted name. A destination must match a
//! rule; a resolved address that is not public (see [`super::addr`]) is
//! refused unless the operator named that address (or a block holding it)
//! in a grant. A plugin's own request never widens anything: naming
//! `127.0.0.1` in a manifest does not unlock loopback.

use std::net::{IpAddr, SocketAddr};

use super::addr::{self, AddressClass};
use super::host::{self, Host};
use super::pattern::{HostMatch, NetPattern, Scheme};
use super::target::Target;

/// One rule of the effective grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRule {
    pub pattern: NetPattern,
    /// The operator's side named addresses (an IP or a block), so the
    /// addresses it admits may be non-public.
    pub names_addresses: bool,
}

/// Why a destination is refused. The text says what was refused and how
/// to allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// What a socket address check needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketVerdict {
    Admit,
    Refuse(Refusal),
    /// Admit if the address is one of the addresses of one of these
    /// granted names (resolve them to find out).
    IfResolvesFrom(Vec<String>),
}

/// The network a call may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffectiveNet {
    rules: Vec<NetRule>,
    granted: Vec<NetPattern>,
    requested: Vec<NetPattern>,
}

impl EffectiveNet {
    /// The intersection of the operator's grant and the plugin's request:
    /// a rule for every pair that overlaps.
    pub fn new(granted: &[NetPattern], requested: &[NetPattern]) -> EffectiveNet {
        let mut rules: Vec<NetRule> = Vec::new();
        for g in granted {
            for r in requested {
                if let Some(pattern) = g.meet(r) {
                    let names_addresses =
                        matches!(g, NetPattern::Host { host, .. } if host.names_addresses());
                    let rule = NetRule {
                        pattern,
                        names_addresses,
                    };
                    if !rules.contains(&rule) {
                        rules.push(rule);
                    }
                }
            }
        }
        EffectiveNet {
            rules,
            granted: granted.to_vec(),
            requested: requested.to_vec(),
        }
    }

    pub fn rules(&self) -> &[NetRule] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether a guest needs name lookup: some rule admits names.
    pub fn needs_name_lookup(&self) -> bool {
        self.rules.iter().any(|r| match &r.pattern {
            NetPattern::AllowAll => true,
            NetPattern::Host { host, scheme, .. } => {
                scheme.is_none() && matches!(host, HostMatch::Name(_) | HostMatch::Subdomains(_))
            }
        })
    }

    /// Whether raw sockets are possible at all: some rule is not HTTP-only.
    pub fn allows_sockets(&self) -> bool {
        self.rules.iter().any(|r| match &r.pattern {
            NetPattern::AllowAll => true,
            NetPattern::Host { scheme, .. } => scheme.is_none(),
        })
    }

    /// The first check of an HTTP request: does a rule admit its host?
    /// (Its addresses are checked with [`EffectiveNet::check_address`]
    /// once resolved.)
    pub fn check_target(&self, target: &Target) -> Result<(), Refusal> {
        let scheme = Some(target.scheme);
        if self
            .rules
            .iter()
            .any(|r| r.pattern.matches(scheme, &target.host, target.port))
        {
            return Ok(());
        }
        let pattern = format!("{}:{}", target.host, target.port);
        let operator = self
            .granted
            .iter()
            .any(|g| g.matches(scheme, &target.host, target.port));
        let why = if operator {
            format!(
                "the plugin does not request it (it asks for: {})",
                list(&self.requested)
            )
        } else {
            format!(
                "this call's network grant does not cover it (granted: {}); grant it with \
                 `--grant-net {pattern}` or in the plugin's `grant-net` config entry",
                list(&self.granted)
            )
        };
        Err(Refusal {
            reason: format!("request to `{}` refused: {why}", target.host),
        })
    }

    /// The second check of an HTTP request, for each address its host
    /// resolved to: a non-public address needs a rule that names it.
    pub fn check_address(&self, target: &Target, ip: IpAddr) -> Result<(), Refusal> {
        let ip = host::canonical(ip);
        let Some(class) = addr::classify(ip) else {
            return Ok(());
        };
        if self.names(Some(target.scheme), ip, target.port) {
            return Ok(());
        }
        Err(non_public(&target.host.to_string(), ip, target.port, class))
    }

    /// The check of a guest's name lookup (`wasi:sockets/ip-name-lookup`):
    /// only a name a raw-socket rule names (exactly, or below a granted
    /// `*.domain`, or anything under `insecure:allow-all`) may be looked
    /// up, so a lookup is no channel of its own (`secret.attacker.example`)
    /// and no map of internal names. Address literals need no lookup.
    pub fn check_name_lookup(&self, name: &str) -> Result<(), Refusal> {
        let host = match Host::parse(name.trim_end_matches('.')) {
            Ok(Host::Ip(_)) => return Ok(()),
            Ok(host) => host,
            Err(e) => {
                return Err(Refusal {
                    reason: format!("lookup of `{name}` refused: {e}"),
                });
            }
        };
        let covered = self.rules.iter().any(|r| match &r.pattern {
            NetPattern::AllowAll => true,
            NetPattern::Host {
                scheme: None,
                host: h,
                ..
            } => h.matches(&host),
            NetPattern::Host { .. } => false,
        });
        if covered {
            return Ok(());
        }
        Err(Refusal {
            reason: format!(
                "lookup of `{host}` refused: no raw-socket grant of this call names it (granted: {}); \
                 grant it with `--grant-net {host}:PORT` or in the plugin's `grant-net` config entry",
                list(&self.granted)
            ),
        })
    }

    /// The check of a raw socket connection (or datagram) to `addr`.
    pub fn check_socket(&self, addr: SocketAddr) -> SocketVerdict {
        let ip = host::canonical(addr.ip());
        let port = addr.port();
        let host = Host::Ip(ip);
        if let Some(class) = addr::classify(ip) {
            return if self.names(None, ip, port) {
                SocketVerdict::Admit
            } else {
                SocketVerdict::Refuse(non_public(&ip.to_string(), ip, port, class))
            };
        }
        if self
            .rules
            .iter()
            .any(|r| r.pattern.matches(None, &host, port))
        {
            return SocketVerdict::Admit;
        }
        let names: Vec<String> = self
            .rules
            .iter()
            .filter_map(|r| match &r.pattern {
                NetPattern::Host {
                    scheme: None,
                    host: HostMatch::Name(n),
                    port: p,
                } if p.is_none_or(|p| p == port) => Some(n.clone()),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            SocketVerdict::Refuse(Refusal {
                reason: format!(
                    "connection to {} refused: no network grant of this call covers it (granted: {})",
                    SocketAddr::new(ip, port),
                    list(&self.granted)
                ),
            })
        } else {
            SocketVerdict::IfResolvesFrom(names)
        }
    }

    /// Whether a rule that came from an operator's address grant admits
    /// `ip:port`.
    fn names(&self, scheme: Option<Scheme>, ip: IpAddr, port: u16) -> bool {
        self.rules
            .iter()
            .any(|r| r.names_addresses && r.pattern.matches(scheme, &Host::Ip(ip), port))
    }
}

fn non_public(host: &str, ip: IpAddr, port: u16, class: AddressClass) -> Refusal {
    let shown = Host::Ip(ip);
    let via = if host == shown.to_string() {
        String::new()
    } else {
        format!(" (`{host}` resolves to it)")
    };
    Refusal {
        reason: format!(
            "connection to {shown}:{port} refused: {ip} is a {class} address{via}, and only \
             public addresses are reachable unless a grant names the address; grant it with \
             `--grant-net {shown}:{port}` if this is intended"
        ),
    }
}

fn list(patterns: &[NetPattern]) -> String {
    if patterns.is_empty() {
        return "nothing".into();
    }
    patterns
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
