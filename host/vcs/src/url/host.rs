//! One host, canonicalised the way curl and the resolver will read it.
//!
//! Attack: a host whose text hides the address it reaches — numeric IPv4
//! spellings (`0x7f.1`, `2130706433`, `017700000001`, `127.1`), IDNA
//! look-alikes and full-width dots (`127。0。0。1`), upper case, a trailing
//! dot, IPv4 embedded in IPv6, a zone id, a percent-encoded byte, or a
//! leading `-` that ssh takes for an option. The WHATWG host parser (the
//! `url` crate: IDNA, then "ends in a number" means IPv4) turns every such
//! spelling into one canonical host; `warden-api`'s host syntax then
//! refuses whatever is not a plain DNS name or address.

use std::net::{IpAddr, Ipv6Addr};

use warden_api::net::Host;

use crate::error::UrlError;

fn refuse(host: &str, reason: impl Into<String>) -> UrlError {
    UrlError::Host {
        host: host.escape_debug().to_string(),
        reason: reason.into(),
    }
}

/// Canonicalises the host part of a URL (brackets included for IPv6).
pub(crate) fn canonical_host(text: &str) -> Result<Host, UrlError> {
    if text.is_empty() {
        return Err(refuse(text, "the host is empty"));
    }
    if text.starts_with('-') {
        return Err(UrlError::LeadingDash {
            part: "host",
            value: text.escape_debug().to_string(),
        });
    }
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| refuse(text, "unclosed `[`"))?;
        if inner.contains('%') {
            return Err(UrlError::ZoneId);
        }
        let v6: Ipv6Addr = inner
            .parse()
            .map_err(|_| refuse(text, "not an IPv6 address"))?;
        return Ok(Host::Ip(IpAddr::V6(v6).to_canonical()));
    }
    if text.contains('%') {
        return Err(refuse(text, "a percent-encoded host is refused"));
    }
    if text.contains(':') {
        return Err(refuse(text, "an IPv6 address must be in brackets"));
    }
    if text.contains(['[', ']']) {
        return Err(refuse(text, "brackets enclose only an IPv6 address"));
    }
    let parsed = url::Host::parse(text).map_err(|e| refuse(text, e.to_string()))?;
    match parsed {
        url::Host::Ipv4(v4) => Ok(Host::Ip(IpAddr::V4(v4))),
        url::Host::Ipv6(v6) => Ok(Host::Ip(IpAddr::V6(v6).to_canonical())),
        url::Host::Domain(name) => domain(text, &name),
    }
}

fn domain(text: &str, name: &str) -> Result<Host, UrlError> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.ends_with('.') {
        return Err(refuse(text, "empty label"));
    }
    if name.split('.').any(|label| label.starts_with('-')) {
        return Err(UrlError::LeadingDash {
            part: "host",
            value: name.to_owned(),
        });
    }
    match Host::parse(name) {
        Ok(Host::Name(n)) if n == name => Ok(Host::Name(n)),
        // The WHATWG parser already read every numeric spelling; a name
        // the stricter syntax reads differently is ambiguous.
        Ok(_) => Err(refuse(text, "ambiguous host")),
        Err(e) => Err(refuse(text, e.to_string())),
    }
}
