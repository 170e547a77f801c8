//! Splitting a git URL the way git does (`connect.c`: `is_url`,
//! `url_is_local_not_ssh`, `host_end`, `get_host_and_port`; `transport.c`
//! for `helper::`), refusing every form where git, curl and ssh could
//! read the parts differently from this parser.

use warden_api::net::Host;

use super::host::canonical_host;
use super::{GitUrl, Transport};
use crate::error::UrlError;
use crate::vet::GitNetPolicy;

/// Longer URLs are refused before any parsing.
pub const MAX_URL_LEN: usize = 2048;

/// Parses a git remote URL with plain http refused. See [`GitUrl`].
pub fn parse_git_url(text: &str) -> Result<GitUrl, UrlError> {
    parse_git_url_with(text, &GitNetPolicy::new())
}

/// Parses a git remote URL; plain `http://` is accepted only when the
/// policy allows insecure http.
pub fn parse_git_url_with(text: &str, policy: &GitNetPolicy) -> Result<GitUrl, UrlError> {
    screen(text)?;
    let helper_len = scheme_prefix_len(text);
    if text[helper_len..].starts_with("::") {
        return Err(UrlError::RemoteHelper {
            helper: text[..helper_len].to_owned(),
        });
    }
    screen_text(text)?;
    if let Some(pos) = text.find("://") {
        let scheme = &text[..pos];
        let rest = &text[pos + 3..];
        if scheme.is_empty() || scheme_prefix_len(scheme) != scheme.len() {
            return Err(UrlError::Scheme {
                scheme: scheme.to_owned(),
                why: "is not a valid URL scheme",
            });
        }
        return match scheme.to_ascii_lowercase().as_str() {
            "https" => http_like(Transport::Https, rest),
            "http" if policy.allows_insecure_http() => http_like(Transport::Http, rest),
            "ssh" => ssh_url(rest),
            other => Err(UrlError::Scheme {
                scheme: other.to_owned(),
                why: refused_scheme_reason(other),
            }),
        };
    }
    scp_like(text)
}

fn refused_scheme_reason(scheme: &str) -> &'static str {
    match scheme {
        "http" => "is plain text; the git policy does not allow insecure http",
        "git" => "is unauthenticated and plain text (and may run core.gitProxy)",
        "file" => "reads the host's own files (local-clone CVEs); only https and ssh are allowed",
        "git+ssh" | "ssh+git" => "is a deprecated alias; write ssh://",
        _ => "is not a transport Warden allows (https and ssh only)",
    }
}

/// Refusals that hold for every part of every URL, checked first.
fn screen(text: &str) -> Result<(), UrlError> {
    if text.is_empty() {
        return Err(UrlError::Empty);
    }
    if text.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong { limit: MAX_URL_LEN });
    }
    if text.chars().any(char::is_control) {
        return Err(UrlError::ControlCharacter);
    }
    Ok(())
}

/// Refusals after the remote-helper check (so `ext::sh -c …` is named as
/// the remote helper it is, not as whitespace).
fn screen_text(text: &str) -> Result<(), UrlError> {
    if text.chars().any(char::is_whitespace) {
        return Err(UrlError::Whitespace);
    }
    if text.contains('\\') {
        return Err(UrlError::Backslash);
    }
    Ok(())
}

/// Length of the leading run of URL-scheme characters (git's
/// `is_urlschemechar`: a letter first, then letters, digits, `+`, `-`, `.`).
fn scheme_prefix_len(text: &str) -> usize {
    text.bytes()
        .enumerate()
        .take_while(|(i, b)| {
            b.is_ascii_alphabetic() || (*i > 0 && (b.is_ascii_digit() || b"+-.".contains(b)))
        })
        .count()
}

fn http_like(transport: Transport, rest: &str) -> Result<GitUrl, UrlError> {
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        return Err(if userinfo.contains(':') {
            UrlError::Password
        } else {
            UrlError::Userinfo {
                scheme: transport.as_str(),
            }
        });
    }
    let (host, port) = host_and_port(authority, transport)?;
    check_path(path, true)?;
    Ok(GitUrl {
        transport,
        user: None,
        host,
        port,
        path: path.to_owned(),
        scp: false,
    })
}

fn ssh_url(rest: &str) -> Result<GitUrl, UrlError> {
    if rest.contains('%') {
        return Err(UrlError::PercentInSsh);
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((userinfo, hostport)) => (Some(check_user(userinfo)?), hostport),
        None => (None, authority),
    };
    let (host, port) = host_and_port(hostport, Transport::Ssh)?;
    check_path(path, false)?;
    Ok(GitUrl {
        transport: Transport::Ssh,
        user,
        host,
        port,
        path: path.to_owned(),
        scp: false,
    })
}

/// `[user@]host:path` and `[user@][v6]:path`. git reads this form when a
/// colon comes before any slash; it has no port.
fn scp_like(text: &str) -> Result<GitUrl, UrlError> {
    let colon = text.find(':').ok_or(UrlError::LocalPath)?;
    if text.find('/').is_some_and(|slash| slash < colon) {
        return Err(UrlError::LocalPath);
    }
    if text.contains('%') {
        return Err(UrlError::PercentInSsh);
    }
    // git's `host_end` looks for `@[` anywhere; brackets are refused in
    // users and paths, so here it can only open an IPv6 host.
    let (userinfo, host_text, path) = if let Some(at) = text.find("@[") {
        let (host, path) = bracketed(&text[at + 1..])?;
        (Some(&text[..at]), host, path)
    } else if text.starts_with('[') {
        let (host, path) = bracketed(text)?;
        (None, host, path)
    } else {
        let (authority, path) = (&text[..colon], &text[colon + 1..]);
        match authority.rsplit_once('@') {
            Some((user, host)) => (Some(user), host, path),
            None => (None, authority, path),
        }
    };
    let user = userinfo.map(check_user).transpose()?;
    let host = canonical_host(host_text)?;
    if path.starts_with('-') {
        return Err(UrlError::LeadingDash {
            part: "path",
            value: path.to_owned(),
        });
    }
    check_path(path, false)?;
    Ok(GitUrl {
        transport: Transport::Ssh,
        user,
        host,
        port: Transport::Ssh.default_port(),
        path: path.to_owned(),
        scp: true,
    })
}

/// `[v6]:path` -> (`[v6]`, `path`).
fn bracketed(text: &str) -> Result<(&str, &str), UrlError> {
    let close = text.find(']').ok_or_else(|| UrlError::Host {
        host: text.to_owned(),
        reason: "unclosed `[`".to_owned(),
    })?;
    let (host, after) = text.split_at(close + 1);
    let path = after.strip_prefix(':').ok_or_else(|| UrlError::Host {
        host: host.to_owned(),
        reason: "a bracketed scp-like host is followed by `:path` (no port)".to_owned(),
    })?;
    Ok((host, path))
}

fn host_and_port(text: &str, transport: Transport) -> Result<(Host, u16), UrlError> {
    let (host, port) = if text.starts_with('[') {
        match text.find(']') {
            Some(close) => {
                let (host, after) = text.split_at(close + 1);
                match after {
                    "" => (host, None),
                    _ => match after.strip_prefix(':') {
                        Some(port) => (host, Some(port)),
                        None => (text, None),
                    },
                }
            }
            None => (text, None),
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let host = canonical_host(host)?;
    let port = match port {
        None => transport.default_port(),
        Some(p) => parse_port(p)?,
    };
    Ok((host, port))
}

fn parse_port(text: &str) -> Result<u16, UrlError> {
    let bad = |reason| UrlError::Port {
        port: text.to_owned(),
        reason,
    };
    if text.is_empty() {
        return Err(bad("is empty"));
    }
    if text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("is not a number from 1 to 65535"));
    }
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad("is not a number from 1 to 65535")),
        Ok(port) => Ok(port),
    }
}

fn check_user(user: &str) -> Result<String, UrlError> {
    let bad = |reason| UrlError::User {
        user: user.to_owned(),
        reason,
    };
    if user.contains(':') {
        return Err(UrlError::Password);
    }
    if user.starts_with('-') {
        return Err(UrlError::LeadingDash {
            part: "user",
            value: user.to_owned(),
        });
    }
    if user.is_empty() {
        return Err(bad("is empty"));
    }
    if user.len() > 64 {
        return Err(bad("is longer than 64 bytes"));
    }
    if !user
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err(bad("may hold only letters, digits, `.`, `_` and `-`"));
    }
    Ok(user.to_owned())
}

/// A path of RFC 3986 path characters (`%XX` escapes only where
/// `percent` allows them): no query, fragment, brackets, quotes or
/// non-ASCII, and not empty or `/` alone.
fn check_path(path: &str, percent: bool) -> Result<(), UrlError> {
    let bad = |reason| Err(UrlError::Path { reason });
    if path.trim_start_matches('/').is_empty() {
        return bad("names no repository");
    }
    if path.contains(['?', '#']) {
        return bad("has a query or fragment");
    }
    let bytes = path.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let ok = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(b);
        if ok {
            continue;
        }
        if *b == b'%' && percent {
            let hex = bytes.get(i + 1..i + 3);
            if hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                continue;
            }
            return bad("has a `%` that is not a `%XX` escape");
        }
        return bad("has a character outside URL path characters (percent-encode it)");
    }
    Ok(())
}
