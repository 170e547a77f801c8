use thiserror::Error;

/// A policy that cannot be built: each variant names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PolicyError {
    #[error(
        "unknown action type `{0}`: use `category:action` from the taxonomy, a category shortcut such as `code`, or register it under `action-types`"
    )]
    UnknownActionType(String),
    #[error("invalid custom action type `{0}`: expected lower-case `category:action`")]
    InvalidActionType(String),
    #[error("action type `{0}` is registered twice")]
    DuplicateActionType(String),
    #[error("unknown category `{0}`")]
    UnknownCategory(String),
    #[error("invalid rule `{rule}`: {problem}")]
    InvalidRule { rule: String, problem: String },
    #[error(
        "unknown level `{0}`: use sandboxed, restricted, standard, elevated or a level defined under [levels]"
    )]
    UnknownLevel(String),
    #[error("at `{at}`: {problem}")]
    InvalidPrincipal { at: String, problem: String },
    /// A problem in the configuration, at a key path such as `agents.ci.level`.
    #[error("at `{path}`: {error}")]
    At {
        path: String,
        error: Box<PolicyError>,
    },
}
