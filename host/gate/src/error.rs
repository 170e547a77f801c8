use thiserror::Error;

/// Why the gate refused a change: tools that could not be registered, a
/// rule that could not be added.
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
    #[error("two plugins are named `{owner}`: {first} and {second}; load one of them")]
    DuplicateOwner {
        owner: String,
        first: String,
        second: String,
    },
    #[error("`{tool}` is the name of the host's own tool; a plugin cannot register it")]
    ReservedName { tool: String },
    #[error("agent `{0}` is not configured")]
    UnknownAgent(String),
    #[error("the rule `{rule}` is not valid")]
    InvalidRule {
        rule: String,
        #[source]
        source: warden_policy::PolicyError,
    },
    #[error("{what} could not be recorded")]
    NotRecorded {
        what: String,
        #[source]
        source: warden_api::JournalError,
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
