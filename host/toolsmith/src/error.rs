//! Why a blueprint is refused, or a lifecycle step is not possible.

/// Why a blueprint is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlueprintError {
    #[error("the blueprint is malformed: {reason}")]
    Malformed { reason: String },
    #[error("the blueprint's {what} is larger than the limit ({limit})")]
    TooLarge { what: String, limit: usize },
    #[error("the blueprint's {what} {reason}")]
    Invalid { what: String, reason: String },
    #[error("the blueprint's capability is not valid: {reason}")]
    Capability { reason: String },
    #[error("the blueprint cannot be derived: {reason}")]
    Derive { reason: String },
}

/// A lifecycle step that is not allowed from where a blueprint stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a blueprint cannot move from {from} to {to}")]
pub struct TransitionError {
    pub from: crate::State,
    pub to: crate::State,
}
