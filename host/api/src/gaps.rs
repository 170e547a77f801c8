//! Unfulfilled requests, as the gate reports them to the toolsmith's gap
//! log: a call to a tool nobody offers, or a capability request for one.

use crate::JournalError;

/// What was asked for that no tool offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfulfilled {
    /// A call to a tool of this name.
    UnknownTool { name: String },
    /// `request_capability` for `tool:NAME`.
    ToolCapability { name: String },
}

impl Unfulfilled {
    /// The tool name asked for.
    pub fn name(&self) -> &str {
        match self {
            Unfulfilled::UnknownTool { name } | Unfulfilled::ToolCapability { name } => name,
        }
    }
}

/// Where the gate reports unfulfilled requests. Reporting never changes
/// the answer the agent gets.
pub trait GapLog: Send + Sync {
    /// `agent`, in `session`, asked for `what`.
    fn unfulfilled(
        &self,
        agent: &str,
        session: &str,
        what: &Unfulfilled,
    ) -> Result<(), JournalError>;
}
