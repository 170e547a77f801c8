//! Progressive trust as operators reach it in a running host: an agent's
//! trust state, a person's rating of its work, and a person's approval of
//! a promotion that waits for one (the only way to elevated). The admin
//! API serves it; the gate implements it over the trust it keeps.

use serde_json::Value;

use crate::{Attribution, JournalError};

/// Why a trust operation was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    #[error("agent `{0}` is not configured")]
    UnknownAgent(String),
    #[error("progressive trust is disabled (`[progressive-trust]` in the config)")]
    Disabled,
    #[error("agent `{0}` has no promotion waiting for a person")]
    NothingWaiting(String),
    #[error("a score must be between 0 and 1, not {0}")]
    InvalidScore(f64),
    #[error("the trust change could not be recorded, so it was not made: {0}")]
    NotRecorded(#[source] JournalError),
}

pub trait TrustAdmin: Send + Sync {
    /// The agent's trust state, as JSON.
    fn show(&self, agent: &str) -> Result<Value, TrustError>;
    /// A person rated the agent's work (0..=1), for one category or all.
    fn feedback(
        &self,
        agent: &str,
        category: Option<&str>,
        score: f64,
    ) -> Result<Value, TrustError>;
    /// A person (`by`) approved the promotion waiting for one.
    fn approve(&self, agent: &str, by: Attribution) -> Result<Value, TrustError>;
}
