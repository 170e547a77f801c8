//! The destination of one outgoing request, read from the parts of its
//! URL, with the spellings that confuse URL parsers refused.
//!
//! Attack: a URL that one parser reads as a granted host and another as a
//! different one — `http://granted.example\@evil.example/`,
//! `http://user@evil.example`, a tab or newline inside the host, a
//! percent-encoded or control character. Such URLs are refused outright
//! instead of being "fixed up", so the host the grant check sees is the
//! host the connection goes to.

use std::fmt;

use super::NetError;
use super::host::Host;
use super::pattern::Scheme;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    pub host: Host,
    pub port: u16,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

/// Refuses text with a backslash, whitespace, a control character or a
/// non-ASCII character: none belongs in a URL on the wire.
pub fn check_url_text(what: &str, text: &str) -> Result<(), NetError> {
    let bad = |reason: &str| NetError::InvalidUrl {
        url: text.escape_debug().to_string(),
        reason: format!("{what} {reason}"),
    };
    if text.contains('\\') {
        return Err(bad("contains a backslash"));
    }
    if text.chars().any(char::is_whitespace) {
        return Err(bad("contains whitespace"));
    }
    if text.chars().any(|c| c.is_control()) {
        return Err(bad("contains a control character"));
    }
    if !text.is_ascii() {
        return Err(bad("contains a non-ASCII character (percent-encode it)"));
    }
    Ok(())
}

impl Target {
    /// The target of a request from its scheme, authority (`host[:port]`)
    /// and path: userinfo, a percent sign in the host, an empty or invalid
    /// port and every character [`check_url_text`] refuses are errors.
    pub fn from_parts(scheme: &str, authority: &str, path: &str) -> Result<Target, NetError> {
        let whole = format!("{scheme}://{authority}{path}");
        let bad = |reason: &str| NetError::InvalidUrl {
            url: whole.escape_debug().to_string(),
            reason: reason.to_owned(),
        };
        let scheme =
            Scheme::parse(scheme).ok_or_else(|| bad("only http and https are supported"))?;
        check_url_text("the host", authority)?;
        check_url_text("the path", path)?;
        if authority.contains('@') {
            return Err(bad(
                "credentials in the URL (`user@host`) are refused; send them in a header",
            ));
        }
        if authority.contains('%') {
            return Err(bad("a percent-encoded host is refused"));
        }
        let (host, port) = split_authority(authority).map_err(|r| bad(&r))?;
        let host = Host::parse(host)?;
        Ok(Target {
            scheme,
            host,
            port: port.unwrap_or(scheme.default_port()),
        })
    }

    /// Parses an absolute `http(s)://authority/path?query` URL (a fragment
    /// is dropped) with the same checks as [`Target::from_parts`]; returns
    /// the target and the path with its query.
    pub fn from_url(url: &str) -> Result<(Target, String), NetError> {
        check_url_text("the URL", url)?;
        let bad = |reason: &str| NetError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("not an absolute http(s) URL"))?;
        let rest = rest.split('#').next().unwrap_or_default();
        let cut = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(cut);
        let path = match path {
            "" => "/".to_owned(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_owned(),
        };
        Ok((Target::from_parts(scheme, authority, &path)?, path))
    }
}

fn split_authority(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']').ok_or("unclosed `[` in the host")?;
        let (host, rest) = authority.split_at(close + 1);
        match rest {
            "" => (host, None),
            r => (
                host,
                Some(r.strip_prefix(':').ok_or("junk after the IPv6 address")?),
            ),
        }
    } else {
        let (h, p) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if h.contains(':') {
            return Err("an IPv6 host must be written in brackets".into());
        }
        (h, p)
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => Some(
            p.parse::<u16>()
                .map_err(|_| format!("port {p} is out of range"))?,
        ),
        Some(p) => return Err(format!("`{p}` is not a port")),
    };
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    Ok((host, port))
}
