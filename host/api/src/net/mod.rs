//! Network grants: the pattern syntax, host and address parsing, the
//! non-public address rules, and the checks the runtime applies to every
//! socket connection and HTTP request. Pure: no I/O, no resolver; the
//! runtime resolves names and feeds the addresses back in.

mod addr;
mod grant;
mod host;
mod pattern;
mod target;

use thiserror::Error;

pub use addr::{AddressClass, classify, embedded_v4, non_public_blocks};
pub use grant::{EffectiveNet, NetRule, Refusal, SocketVerdict};
pub use host::{Host, parse_ipv4};
pub use pattern::{ALLOW_ALL, Cidr, HostMatch, NetPattern, Scheme};
pub use target::{Target, check_url_text};

/// A network pattern, host or URL that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NetError {
    #[error("network pattern `{pattern}`: {reason}")]
    InvalidPattern { pattern: String, reason: String },
    #[error("host `{host}`: {reason}")]
    InvalidHost { host: String, reason: String },
    #[error("URL `{url}` refused: {reason}")]
    InvalidUrl { url: String, reason: String },
}

#[cfg(test)]
mod tests;
