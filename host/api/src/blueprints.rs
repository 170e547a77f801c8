//! Blueprints agents propose through the host's own `toolsmith_propose`
//! tool, as the gate hands them to the toolsmith. A proposal only ever
//! waits for a person (`tool:create`); nothing an agent sends here builds
//! or registers anything.

use serde::{Deserialize, Serialize};

/// The name of the host's own tool for proposing a blueprint; never a
/// plugin's. Its action type is `tool:create`.
pub const TOOLSMITH_PROPOSE: &str = "toolsmith_propose";

/// A blueprint kept, waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedBlueprint {
    pub id: u64,
    /// The name the host derived (`gen_{domain}_{action}`).
    pub name: String,
    pub state: String,
    pub blueprint_sha256: String,
}

/// Why a proposal was not kept (a malformed or widening blueprint, or
/// the store failing), said so the author can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProposalRefused {
    pub message: String,
}

/// Where the gate hands the blueprints agents propose.
pub trait BlueprintDesk: Send + Sync {
    /// `agent`, in `session`, proposed `blueprint` (the tool's argument).
    fn propose(
        &self,
        agent: &str,
        session: &str,
        blueprint: serde_json::Value,
    ) -> Result<ProposedBlueprint, ProposalRefused>;
}

/// What the model behind an agent's MCP client is asked to write: a
/// blueprint for one recurring gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorBrief {
    /// The gap's capability signature (`domain:action`).
    pub signature: String,
    /// The system prompt: what a blueprint is and how to write one.
    pub system: String,
    /// The request: the gap, the name the host will give the tool, its
    /// grants in words and the size limits, as JSON.
    pub request: String,
    /// The most tokens the model may write.
    pub max_tokens: u32,
    /// How long the model has.
    pub deadline: std::time::Duration,
}

/// Recurring gaps written up by the model behind the MCP client whose
/// call made them recurring (MCP sampling, `[toolsmith] author-sampling`).
/// The model's text is only a proposal, read and derived like any other,
/// kept as `pending` for a person's `tool:create` approval.
pub trait SamplingAuthor: Send + Sync {
    /// The gap a call of `agent` in `session` just made recurring, if
    /// any, with what to ask; taken, so each is asked for once. An
    /// error says why no brief could be made.
    fn take(&self, agent: &str, session: &str) -> Option<Result<AuthorBrief, ProposalRefused>>;

    /// Keeps what the model of `agent`'s client wrote for the gap
    /// `signature` it was asked about: refused when it was not asked
    /// (or its answer was already taken, or came after the deadline), or
    /// when the text is not a blueprint for that capability.
    fn written(
        &self,
        agent: &str,
        signature: &str,
        text: &str,
    ) -> Result<ProposedBlueprint, ProposalRefused>;
}
