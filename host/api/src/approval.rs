//! Asking a person: the question, the answer, and who can answer. The
//! gate asks; the terminal, the MCP client (elicitation) or the approvals
//! book answer.

use serde::{Deserialize, Serialize};

use crate::BoxFuture;

/// What a person is asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Filled in by the approver that holds the request.
    pub id: String,
    pub agent: String,
    pub request_id: String,
    pub tool: String,
    /// `tool(specifier)`, as the policy saw the call.
    pub call: String,
    /// Why the policy asks.
    pub reason: String,
    /// A rule that would allow exactly this call; the person may broaden it.
    pub suggested_rule: String,
    /// A keyed hash of the call's arguments (keyed per process, so it
    /// cannot be forged): binds an answer to the exact arguments.
    pub args_fingerprint: String,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "kebab-case")]
pub enum ApprovalAnswer {
    AllowOnce,
    /// Allow, and add this allow rule for the agent.
    AlwaysAllow {
        rule: String,
    },
    Deny {
        reason: String,
    },
    /// Nobody has answered yet: the request waits under `id` (see the
    /// approvals book); the caller retries once a person answered.
    Pending {
        id: String,
    },
}

/// Something that can get a person's answer.
pub trait Approver: Send + Sync {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer>;
}
