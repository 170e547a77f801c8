//! What an operator's console shows beside the approvals: the agents
//! (level, mode, trust), the capability grants in force (and revoking
//! them), the audit trail and the state of its chain. The MCP crate only
//! renders; the host behind [`OperatorView`] reads its store.

use serde::Serialize;
use serde_json::Value;

use crate::{AdminError, Attribution};

/// One configured agent as it stands now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentSummary {
    pub name: String,
    /// The configured access level (`None`: rules only).
    pub level: Option<String>,
    pub mode: String,
    /// Progressive trust's state, when it is enabled.
    pub trust: Option<Value>,
    /// Its trust level's changes, newest first (the host reads them from
    /// the audit trail; empty from the gate).
    pub trust_history: Vec<TrustChange>,
}

/// One change of an agent's trust level (or a promotion awaiting a
/// person), as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrustChange {
    pub at_ms: u64,
    pub from: String,
    pub to: String,
    pub reason: String,
    /// The person who made it, when one did.
    pub by: Option<String>,
}

/// A capability grant in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantSummary {
    pub id: String,
    pub agent: String,
    /// The session it is bound to, if any.
    pub session: Option<String>,
    pub capability: String,
    /// Paths, hosts and branches it is limited to, in words.
    pub boundary: String,
    pub goal: String,
    pub issuer: String,
    pub valid_to_ms: u64,
}

/// Which audit records to show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub agent: Option<String>,
    /// A tool name the record's call or tool names.
    pub tool: Option<String>,
    /// `allow`, `ask` or `deny` (decision records only).
    pub decision: Option<String>,
    /// At most this many, newest first.
    pub limit: usize,
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    pub seq: u64,
    pub at_ms: u64,
    pub kind: String,
    pub event: Value,
    pub hash: String,
}

/// The audit chain: its length and head, and whether it verified (when
/// a verification was asked for): `Ok` with what was checked, or where
/// it broke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainSummary {
    pub records: u64,
    pub head: String,
    pub verified: Option<Result<String, String>>,
}

pub trait OperatorView: Send + Sync {
    /// Every configured agent.
    fn agents(&self) -> Result<Vec<AgentSummary>, AdminError>;
    /// The grants in force now (not revoked, not expired).
    fn grants(&self) -> Result<Vec<GrantSummary>, AdminError>;
    /// Revokes grant `id` on `by`'s word (audited); the next call it
    /// would have allowed is decided without it.
    fn revoke_grant(&self, id: &str, by: Attribution) -> Result<(), AdminError>;
    /// Audit records matching `query`, newest first.
    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, AdminError>;
    /// The chain's head, verified end to end when `verify`.
    fn chain(&self, verify: bool) -> Result<ChainSummary, AdminError>;
}
