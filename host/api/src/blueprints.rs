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
