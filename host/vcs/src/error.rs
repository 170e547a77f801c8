//! The errors of this crate. Each names the rule that refused and the
//! offending part, never the whole URL (it may carry a credential).

use std::net::IpAddr;
use std::path::PathBuf;

use thiserror::Error;
use warden_api::net::AddressClass;

/// Why a git URL was refused before any name was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum UrlError {
    #[error("git URL refused: longer than {limit} bytes")]
    TooLong { limit: usize },
    #[error("git URL refused: it is empty")]
    Empty,
    #[error("git URL refused: contains a control character")]
    ControlCharacter,
    #[error("git URL refused: contains whitespace")]
    Whitespace,
    #[error("git URL refused: contains a backslash")]
    Backslash,
    #[error(
        "git URL refused: `{helper}::` runs a remote helper (a program); only https and ssh are allowed"
    )]
    RemoteHelper { helper: String },
    #[error("git URL refused: a local path; only https and ssh remotes are allowed")]
    LocalPath,
    #[error("git URL refused: the `{scheme}` scheme {why}")]
    Scheme { scheme: String, why: &'static str },
    #[error("git URL refused: a password in the URL is never accepted")]
    Password,
    #[error("git URL refused: credentials in an {scheme} URL are refused")]
    Userinfo { scheme: &'static str },
    #[error("git URL refused: the user `{user}` {reason}")]
    User { user: String, reason: &'static str },
    #[error("git URL refused: the {part} `{value}` starts with `-` and could be read as an option")]
    LeadingDash { part: &'static str, value: String },
    #[error(
        "git URL refused: git decodes percent-encoding in ssh URLs before ssh reads them; write the characters plainly"
    )]
    PercentInSsh,
    #[error("git URL refused: an IPv6 zone id (`%`) names a local interface")]
    ZoneId,
    #[error("git URL refused: host `{host}`: {reason}")]
    Host { host: String, reason: String },
    #[error("git URL refused: port `{port}` {reason}")]
    Port { port: String, reason: &'static str },
    #[error("git URL refused: the path {reason}")]
    Path { reason: &'static str },
}

/// Why a parsed git URL may not be fetched from or pushed to.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VetError {
    /// An answer (or the literal host) is in a non-public range and the
    /// policy's hostname allowlist does not name the host.
    #[error(
        "{class} address {addr} for {host}; add `{host}` to the git hostname allowlist if it is a trusted internal server"
    )]
    NonPublic {
        class: AddressClass,
        addr: IpAddr,
        host: String,
    },
    /// An answer in a range no git server lives in, refused even for an
    /// allowlisted host (metadata, unspecified, multicast, broadcast).
    #[error(
        "{class} address {addr} for {host} is never a git server (refused even for allowlisted hosts)"
    )]
    NeverAllowed {
        class: AddressClass,
        addr: IpAddr,
        host: String,
    },
    #[error("plain http to {host} refused: the git policy does not allow insecure http")]
    InsecureHttp { host: String },
    #[error("{host} resolved to no address")]
    NoAddress { host: String },
    #[error("resolving {host} failed: {source}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
}

/// Why a repository's configuration was refused.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConfigViolation {
    #[error(
        "repository config key `{key}` is not allowed ({file}:{line}); Warden runs git only on repositories whose config holds known-harmless keys"
    )]
    Key {
        key: String,
        file: PathBuf,
        line: usize,
    },
    #[error("repository config {file}:{line} cannot be read safely: {reason}")]
    Syntax {
        file: PathBuf,
        line: usize,
        reason: &'static str,
    },
    #[error("repository config {file} is larger than {limit} bytes")]
    TooLarge { file: PathBuf, limit: usize },
    #[error("{file} is not a regular file")]
    NotARegularFile { file: PathBuf },
    #[error("{path} leads outside the workspace {root}")]
    Outside { path: PathBuf, root: PathBuf },
    #[error("{file} is not a valid `gitdir:` pointer: {reason}")]
    GitFile { file: PathBuf, reason: &'static str },
    #[error("reading {file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a git invocation could not be built from the given values.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ArgError {
    #[error("{what} `{value}` starts with `-` and could be read as an option")]
    LeadingDash { what: &'static str, value: String },
    #[error("{what} `{value}` refused: {reason}")]
    Invalid {
        what: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("`git {op}` needs a vetted remote URL")]
    MissingVetted { op: &'static str },
    #[error("`git {op}` is local and takes no remote URL")]
    UnexpectedVetted { op: &'static str },
}
