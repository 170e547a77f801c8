//! Errors at the crate boundary.

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    #[error(
        "refusing to listen on {addr}: it is not a loopback address and no bearer tokens are configured (add [[serve.tokens]] to the config)"
    )]
    UnauthenticatedPublicBind { addr: std::net::SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("the MCP session failed: {0}")]
    Session(String),
    #[error("admin API at {at}: {message}")]
    Admin { at: String, message: String },
    #[error("server configuration: {0}")]
    Config(String),
    #[error("tool `{tool}`: its definition does not serialise: {reason}")]
    Definition { tool: String, reason: String },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
