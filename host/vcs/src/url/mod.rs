//! Git remote URLs, parsed into the one form git will be given.
//!
//! Attack: server-side request forgery and option injection through the
//! URL of a clone, fetch or push. A URL can name a program instead of a
//! server (`ext::sh -c …`, any `helper::`), a local path (hard-link CVEs),
//! an unauthenticated or plain-text transport (`git://`, `http://`), a host
//! dressed up so that a text check and the resolver disagree (`0x7f.1`,
//! `2130706433`, `[::ffff:127.0.0.1]`, full-width dots, a trailing dot, an
//! IPv6 zone id), or a host, user or path that ssh reads as an option
//! (`-oProxyCommand=…`, CVE-2017-1000117). Every such URL is refused here;
//! what is accepted is canonicalised (IDNA, lower case, numeric IPv4 read
//! as the address it is) and git is given the canonical rendering, never
//! the caller's text, so the host vetted is the host connected to.

mod host;
mod parse;

use std::fmt;

use warden_api::net::Host;

pub use parse::{parse_git_url, parse_git_url_with};

/// Which git transport a URL uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Https,
    /// Plain http: parsed only when the policy spells out that it allows it.
    Http,
    Ssh,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Https => "https",
            Transport::Http => "http",
            Transport::Ssh => "ssh",
        }
    }

    /// 443 for https, 80 for http, 22 for ssh.
    pub fn default_port(self) -> u16 {
        match self {
            Transport::Https => 443,
            Transport::Http => 80,
            Transport::Ssh => 22,
        }
    }
}

/// A vetted-syntax git remote URL. Only [`parse_git_url`] makes one, so
/// every value carries the parser's guarantees: an ASCII canonical host
/// that does not start with `-`, a port in 1..=65535, a user (ssh only) of
/// `[A-Za-z0-9._-]` not starting with `-`, and a path of URL characters
/// that cannot be read as an option.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GitUrl {
    transport: Transport,
    user: Option<String>,
    host: Host,
    port: u16,
    path: String,
    /// Written scp-like (`user@host:path`): the path is relative to the
    /// remote user's home and is rendered in that form again.
    scp: bool,
}

impl GitUrl {
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The ssh user, if the URL names one.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The port, the transport's default when the URL names none.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The path: absolute (`/owner/repo.git`) except for scp-like URLs,
    /// whose path is relative to the remote user's home.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn is_scp_like(&self) -> bool {
        self.scp
    }

    /// The host as git, curl and ssh will be given it: a DNS name, an IPv4
    /// address, or an IPv6 address in brackets.
    pub fn host_text(&self) -> String {
        self.host.to_string()
    }

    /// `host/path` without a leading slash: the specifier rules name
    /// (`github.com/owner/repo.git`).
    pub fn specifier(&self) -> String {
        format!("{}/{}", self.host, self.path.trim_start_matches('/'))
    }
}

/// The canonical rendering, the only form git is given.
impl fmt::Display for GitUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = self.port == self.transport.default_port();
        match self.transport {
            Transport::Https | Transport::Http => {
                write!(f, "{}://{}", self.transport.as_str(), self.host)?;
                if !default {
                    write!(f, ":{}", self.port)?;
                }
                f.write_str(&self.path)
            }
            Transport::Ssh if self.scp && default => {
                if let Some(user) = &self.user {
                    write!(f, "{user}@")?;
                }
                write!(f, "{}:{}", self.host, self.path)
            }
            Transport::Ssh => {
                f.write_str("ssh://")?;
                if let Some(user) = &self.user {
                    write!(f, "{user}@")?;
                }
                write!(f, "{}", self.host)?;
                if !default {
                    write!(f, ":{}", self.port)?;
                }
                if self.path.starts_with('/') {
                    f.write_str(&self.path)
                } else {
                    // git strips the `/` before `~`: `/~/p` is `~/p`,
                    // relative to the remote user's home, as the scp form was.
                    if !self.path.starts_with('~') {
                        f.write_str("/~/")?;
                    } else {
                        f.write_str("/")?;
                    }
                    f.write_str(&self.path)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// Canonicalises a bare host as a URL's host would be (for allowlists).
pub(crate) fn canonical(text: &str) -> Result<Host, crate::error::UrlError> {
    host::canonical_host(text)
}
