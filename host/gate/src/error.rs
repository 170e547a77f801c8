use thiserror::Error;

/// Why tools could not be registered with the gate.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GateError {
    #[error(
        "tool `{tool}` is exported by both `{first}` and `{second}`; remove one of the plugins"
    )]
    DuplicateTool {
        tool: String,
        first: String,
        second: String,
    },
    #[error("tool `{tool}` has an invalid params schema: {reason}")]
    InvalidSchema { tool: String, reason: String },
    #[error("tool `{tool}`: example {index} does not match its params schema: {reason}")]
    InvalidExample {
        tool: String,
        index: usize,
        reason: String,
    },
}
