//! Vetting a git URL's destination: the addresses it resolves to, checked
//! and kept for pinning.
//!
//! Attack: SSRF through DNS. A public-looking name resolves to loopback, a
//! private network, CGNAT, link-local or the cloud metadata endpoint —
//! either always, or only on the second lookup (rebinding: the check sees
//! a public answer, git resolves again and connects to 127.0.0.1). Every
//! answer is checked against `warden-api`'s non-public ranges (IPv6 forms
//! that carry IPv4 judged as that IPv4), and the answers are kept, in the
//! resolver's order, as the only addresses git may use: the invocation
//! pins them (`http.curloptResolve`, ssh `HostName`), so git never
//! resolves the name itself.

use std::net::IpAddr;

use warden_api::BoxFuture;
use warden_api::net::{AddressClass, Host, classify};

use crate::error::{UrlError, VetError};
use crate::url::{GitUrl, Transport};

/// At most this many answers are kept (the first ones, in order).
pub const MAX_PINNED_ADDRS: usize = 16;

/// The network rules for git remotes. Defaults deny: no host allowlisted,
/// plain http refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitNetPolicy {
    allowlist: Vec<Host>,
    insecure_http: bool,
}

impl GitNetPolicy {
    /// No allowlisted host; plain http refused.
    pub fn new() -> GitNetPolicy {
        GitNetPolicy::default()
    }

    /// Allows `host` (canonicalised like a URL's host, so `Git.Internal.`
    /// and `git.internal` are one entry) to resolve to loopback, private,
    /// link-local, unique-local, CGNAT, documentation and reserved
    /// addresses: a named internal server. Exact names only, no wildcards.
    pub fn allow_host(mut self, host: &str) -> Result<GitNetPolicy, UrlError> {
        let host = crate::url::canonical(host)?;
        if !self.allowlist.contains(&host) {
            self.allowlist.push(host);
        }
        Ok(self)
    }

    /// Accepts plain `http://` remotes (insecure: no transport security).
    pub fn allow_insecure_http(mut self, allow: bool) -> GitNetPolicy {
        self.insecure_http = allow;
        self
    }

    pub fn allows_insecure_http(&self) -> bool {
        self.insecure_http
    }

    /// Whether the allowlist names `host`.
    pub fn allows_host(&self, host: &Host) -> bool {
        self.allowlist.contains(host)
    }
}

/// A resolver the caller injects (the host's DNS, or a stub in tests).
/// Answers are returned in the order the connection should try them.
pub trait Resolve: Send + Sync {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Vec<IpAddr>, std::io::Error>>;
}

/// A URL together with the addresses git may connect to for it: all
/// public, or the host allowlisted; in the resolver's order, duplicates
/// dropped, at most [`MAX_PINNED_ADDRS`]. Only [`vet`] and
/// [`vet_answers`] make one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vetted {
    url: GitUrl,
    addrs: Vec<IpAddr>,
}

impl Vetted {
    pub fn url(&self) -> &GitUrl {
        &self.url
    }

    /// Never empty; the first is the one a single-address pin (ssh) uses.
    pub fn addrs(&self) -> &[IpAddr] {
        &self.addrs
    }
}

/// Resolves the URL's host through `dns` (an IP literal is not resolved)
/// and vets the answers with [`vet_answers`].
pub async fn vet(
    url: &GitUrl,
    policy: &GitNetPolicy,
    dns: &dyn Resolve,
) -> Result<Vetted, VetError> {
    match url.host() {
        Host::Ip(ip) => vet_answers(url, policy, &[*ip]),
        Host::Name(name) => {
            let answers =
                dns.resolve(name, url.port())
                    .await
                    .map_err(|source| VetError::Resolve {
                        host: name.clone(),
                        source,
                    })?;
            vet_answers(url, policy, &answers)
        }
    }
}

/// Classes no git server lives in: refused even for an allowlisted host
/// (a compromised internal DNS entry must not reach the metadata service).
fn never_allowed(class: AddressClass) -> bool {
    matches!(
        class,
        AddressClass::CloudMetadata
            | AddressClass::Unspecified
            | AddressClass::Multicast
            | AddressClass::Broadcast
    )
}

/// Vets resolver answers for `url`: one non-public answer refuses the
/// whole set (a mixed answer is a rebinding attempt, not a CDN), unless
/// the policy allowlists the host. Order is kept.
pub fn vet_answers(
    url: &GitUrl,
    policy: &GitNetPolicy,
    answers: &[IpAddr],
) -> Result<Vetted, VetError> {
    let host = url.host_text();
    if url.transport() == Transport::Http && !policy.allows_insecure_http() {
        return Err(VetError::InsecureHttp { host });
    }
    let allowlisted = policy.allows_host(url.host());
    let mut addrs: Vec<IpAddr> = Vec::with_capacity(answers.len().min(MAX_PINNED_ADDRS));
    for addr in answers.iter().map(|a| a.to_canonical()) {
        if let Some(class) = classify(addr) {
            if never_allowed(class) {
                return Err(VetError::NeverAllowed { class, addr, host });
            }
            if !allowlisted {
                return Err(VetError::NonPublic { class, addr, host });
            }
        }
        if !addrs.contains(&addr) && addrs.len() < MAX_PINNED_ADDRS {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(VetError::NoAddress { host });
    }
    Ok(Vetted {
        url: url.clone(),
        addrs,
    })
}
