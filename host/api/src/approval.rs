//! Asking a person: the question, the answer, who answered, and who can
//! answer. The gate asks; the terminal, the MCP client (elicitation) or
//! the approvals book answer.

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
    /// A rule that would allow exactly this call.
    pub suggested_rule: String,
    /// A keyed hash of the call's arguments (keyed per host, so it cannot
    /// be forged): binds an answer to the exact arguments.
    pub args_fingerprint: String,
    /// The call's arguments as the person sees them: every argument, with
    /// long values cut and named by their sha256.
    #[serde(default)]
    pub arguments: serde_json::Value,
    /// Whether "always allow" may be offered to the person behind the
    /// agent's client. False for circuit breakers and high-risk actions,
    /// which only an operator can make permanent.
    #[serde(default)]
    pub always_offered: bool,
}

/// Who gave an answer, and on whose word.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answerer {
    /// The person behind the agent's MCP client (elicitation). Their
    /// "always allow" is bounded to the asked call. Answers recorded
    /// before answerers were kept count as this, the narrower one.
    #[default]
    Client,
    /// An operator: the admin socket, the HTTP admin API, or the person at
    /// the terminal running `warden call`.
    Operator(Attribution),
}

/// Who did an operator action, whether they confirmed it explicitly,
/// and why (see [`crate::Guardrail`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    pub actor: String,
    #[serde(default)]
    pub confirm: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "kebab-case")]
pub enum ApprovalAnswer {
    AllowOnce,
    /// Allow, and add this allow rule for the agent.
    AlwaysAllow {
        rule: String,
        #[serde(default)]
        by: Answerer,
    },
    Deny {
        reason: String,
    },
    /// Nobody has answered yet: the request waits under `id` (see the
    /// approvals book); the caller retries once a person answered.
    Pending {
        id: String,
    },
    /// An answer came with the call (an input response) and was refused:
    /// forged or altered, meant for another call, expired, already used,
    /// or from a connection whose agent's asks only an operator answers.
    /// Nothing was recorded; the ask still waits under `id` when it has
    /// one.
    Refused {
        id: Option<String>,
        reason: String,
    },
}

/// Who answers an agent's asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalChannel {
    /// The person behind the agent's MCP client, through elicitation;
    /// operators can answer too.
    Client,
    /// Only operators (admin socket, HTTP admin API); answers arriving on
    /// the agent's own connection are refused.
    Operator,
}

/// Something that can get a person's answer.
pub trait Approver: Send + Sync {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer>;
}

/// Why an answer was not recorded.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    #[error("no approval `{0}` is waiting (it was answered, expired, or never existed)")]
    NotPending(String),
    #[error("approval `{id}` belongs to agent `{owner}`, not `{agent}`")]
    WrongAgent {
        id: String,
        owner: String,
        agent: String,
    },
    #[error("approval `{0}` was asked for another call (tool, specifier or arguments differ)")]
    OtherCall(String),
    #[error("the answer to approval `{id}` could not be recorded, so it was not given: {source}")]
    NotRecorded {
        id: String,
        #[source]
        source: crate::JournalError,
    },
}

/// Asks that wait for a person without holding the call open (the
/// approvals book): what the MCP server and the admin API list and
/// answer. Asking is [`Approver::ask`]: a call not yet answered comes
/// back [`ApprovalAnswer::Pending`] with its id.
pub trait Approvals: Approver {
    /// How long an unanswered ask (and an unused answer) lives.
    fn expiry(&self) -> std::time::Duration;
    /// Every waiting ask, oldest first.
    fn pending(&self) -> Vec<ApprovalRequest>;
    /// The waiting ask `id`.
    fn get(&self, id: &str) -> Option<ApprovalRequest>;
    /// An operator's answer to the waiting ask `id`; the agent's next try
    /// of the same call receives it.
    fn answer(&self, id: &str, answer: ApprovalAnswer) -> Result<ApprovalRequest, AnswerError>;
    /// [`Approvals::answer`] naming who answered in the audit record
    /// (`by`, for example `console:dana`).
    fn answer_by(
        &self,
        id: &str,
        answer: ApprovalAnswer,
        by: &str,
    ) -> Result<ApprovalRequest, AnswerError>;
    /// The answer the person behind the agent's client sent with a retry
    /// of `asked`: only for the ask `id` of that same agent and call.
    fn answer_for_call(
        &self,
        id: &str,
        asked: &ApprovalRequest,
        answer: ApprovalAnswer,
    ) -> Result<ApprovalRequest, AnswerError>;
}
