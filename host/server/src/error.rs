//! Why a host could not be assembled or served. Each variant says what
//! was being done and where (a file, a config key, a flag), and keeps the
//! underlying error as its source.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not valid TOML", path.display())]
    Toml {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    /// A key of a configuration file has a value that does not parse.
    #[error("{}: at `{key}`: {message}", path.display())]
    ConfigKey {
        path: PathBuf,
        key: String,
        message: String,
    },
    /// A configuration value that parsed but cannot be used.
    #[error("{at}: {message}")]
    Config { at: String, message: String },
    /// A grant spelling (`--grant-fs`, `grant-net = [...]`) is wrong.
    #[error("{at}: {message}")]
    Grant { at: String, message: String },
    /// A directory grant reaches the host's own state.
    #[error("{0}")]
    StateReached(String),
    /// A configuration found by chance widens trust.
    #[error("{0}")]
    FoundConfig(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the policy in the configuration")]
    Policy(#[source] warden_policy::PolicyError),
    #[error("a rule on the command line")]
    Rules(#[source] warden_policy::PolicyError),
    #[error("agent `{0}` is not configured")]
    UnknownAgent(String),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] warden_store::StoreError),
    #[error(transparent)]
    Registry(#[from] warden_registry::RegistryError),
    #[error(transparent)]
    Runtime(#[from] warden_runtime::RuntimeError),
    #[error(transparent)]
    Sandbox(#[from] warden_sandbox::SandboxError),
    #[error(transparent)]
    Gate(#[from] warden_gate::GateError),
    #[error(transparent)]
    Mcp(#[from] warden_mcp::McpError),
    /// The plugins' first load stopped without a result (its task
    /// panicked or was cancelled).
    #[error("loading the plugins stopped: {0}")]
    FirstLoad(String),
    /// A measurement of `warden bench` could not be made.
    #[error("benchmark: {0}")]
    Bench(String),
    /// A blueprint refused (the author's side).
    #[error(transparent)]
    Blueprint(#[from] warden_toolsmith::BlueprintError),
    /// A blueprint step not possible from where it stands, or an
    /// approval that no longer holds.
    #[error("blueprint {id}: {message}")]
    Toolsmith { id: u64, message: String },
    /// A proposal over the author's limit.
    #[error("{0}")]
    TooManyBlueprints(String),
    #[error("{what}")]
    Journal {
        what: String,
        #[source]
        source: warden_api::JournalError,
    },
}

impl ServerError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> ServerError {
        ServerError::Io {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn config(at: impl Into<String>, message: impl Into<String>) -> ServerError {
        ServerError::Config {
            at: at.into(),
            message: message.into(),
        }
    }
}
