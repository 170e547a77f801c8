//! What the host writes down so it survives a restart and can be audited:
//! approvals (asked, answered, used), rules added by "always allow", and
//! the audit trail of decisions and outcomes. The traits are here so the
//! gate can write through them without knowing the database behind them
//! (`warden-store` implements both).

use serde::{Deserialize, Serialize};

use crate::{ApprovalAnswer, ApprovalRequest, Attribution};

/// A write the durable store could not make. The caller must treat the
/// change as not done (an ask that was not recorded is not pending). The
/// store's own error is kept as the source.
#[derive(Debug, Clone)]
pub struct JournalError {
    message: String,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl JournalError {
    /// What failed, without an underlying error.
    pub fn new(message: impl Into<String>) -> JournalError {
        JournalError {
            message: message.into(),
            source: None,
        }
    }

    /// What failed (`recording an approval`), caused by `source`.
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> JournalError {
        JournalError {
            message: message.into(),
            source: Some(std::sync::Arc::new(source)),
        }
    }
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for JournalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// An approval as the ledger holds it: asked, and maybe answered but not
/// yet used by the agent's retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenApproval {
    pub request: ApprovalRequest,
    /// What binds the answer to one call (agent, tool, call, arguments).
    pub key: String,
    /// Milliseconds since the Unix epoch.
    pub asked_ms: u64,
    /// The answer and when it was given, once a person answered.
    pub answer: Option<(ApprovalAnswer, u64)>,
}

/// The durable side of the approvals book. Each method is one
/// transaction; an error means nothing was recorded.
pub trait ApprovalLedger: Send + Sync {
    /// Records a new pending approval under an id the ledger gives
    /// (`ap-N`, never given before by any process sharing the ledger;
    /// the request's own id is ignored) and returns that id.
    fn asked(&self, approval: &OpenApproval) -> Result<String, JournalError>;
    /// A person's answer (or an expiry's denial), audited in the same
    /// transaction. `by` says who answered (`admin`, `elicitation`, `expiry`).
    fn answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), JournalError>;
    /// The retry used the answer: it can never be used again. False when
    /// the answer was not there to use (another process sharing the
    /// ledger used it, or it was dropped): the retry must not run on it.
    fn consumed(&self, id: &str, at_ms: u64) -> Result<bool, JournalError>;
    /// Stale answered approvals are closed without being used.
    fn dropped(&self, id: &str, at_ms: u64) -> Result<(), JournalError>;
    /// Approvals waiting for an answer or for a retry, oldest first.
    fn open(&self) -> Result<Vec<OpenApproval>, JournalError>;
    /// The approval `id` while it waits for an answer or for a retry
    /// (none once used, dropped, or never asked): what another process
    /// sharing the ledger recorded since this one last looked.
    fn get(&self, id: &str) -> Result<Option<OpenApproval>, JournalError>;
    /// The open approval of the call bound by `key`, if any (asked by any
    /// process sharing the ledger).
    fn by_key(&self, key: &str) -> Result<Option<OpenApproval>, JournalError>;
}

/// One audited event. Serialised as the body of an audit record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AuditEvent {
    /// The policy's decision on a call.
    Decision {
        agent: String,
        session: String,
        request_id: String,
        /// `tool(specifier)` as the policy saw it.
        call: String,
        decision: String,
        reason: String,
        rule: Option<String>,
        layer: String,
        grant: Option<String>,
        /// `sha256:<hex>` of the arguments' JSON text.
        args_digest: String,
        /// The arguments themselves, only when the operator opted in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<serde_json::Value>,
        /// The signed-in principal (OAuth), when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        principal: Option<crate::Principal>,
    },
    /// A person's answer to an approval (or its expiry).
    Approval {
        id: String,
        agent: String,
        call: String,
        answer: ApprovalAnswer,
        by: String,
    },
    /// How a call that was allowed ended.
    Outcome {
        agent: String,
        session: String,
        request_id: String,
        tool: String,
        ok: bool,
        duration_us: u64,
        limit_hit: bool,
        error_type: Option<String>,
        domain_code: Option<String>,
        /// The signed-in principal (OAuth), when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        principal: Option<crate::Principal>,
    },
    /// A rule added by an "always allow" answer.
    RuleAdded {
        agent: String,
        rule: String,
        approval: Option<String>,
        /// The operator who added it; none when the person behind the
        /// agent's client did (bounded to the asked call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Attribution>,
    },
    /// A capability grant was issued or revoked.
    Grant {
        action: String,
        id: String,
        agent: String,
        capability: String,
        issuer: String,
        /// The operator who did it (the guardrail's actor, confirmation
        /// and reason).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Attribution>,
    },
    /// An agent's trust level changed (or a promotion awaits a person).
    Trust {
        agent: String,
        from: String,
        to: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Attribution>,
    },
    /// An input response (an answer arriving with a call) was refused.
    ResponseRefused {
        agent: String,
        session: String,
        request_id: String,
        call: String,
        approval: Option<String>,
        reason: String,
    },
    /// An installed plugin was removed by an operator.
    PluginRemoved { name: String, by: Attribution },
    /// An operator approved tool definitions of a server (a bridged MCP
    /// server, or a plugin): each tool's definition digest is pinned.
    DefinitionsPinned {
        server: String,
        tools: Vec<PinnedTool>,
        by: Attribution,
    },
    /// An operator withdrew approvals of a server's tool definitions
    /// (`tools` empty: all of them).
    DefinitionsUnpinned {
        server: String,
        tools: Vec<String>,
        by: Attribution,
    },
    /// The heads of the other hosts' audit chains in a shared database,
    /// as this host read them: anchors that make a chain cut short,
    /// rewritten or removed after them detectable.
    ChainHeads { heads: Vec<ChainHead> },
    /// A capability gap became recurring: `signature` (`domain:action`)
    /// was asked for `occurrences` times within the window, from
    /// `sessions` distinct sessions.
    GapRecurring {
        signature: String,
        occurrences: u64,
        sessions: u64,
    },
    /// A toolsmith blueprint moved from `from` (none: it was just
    /// proposed) to `to`, with the digests it stands on: the blueprint's
    /// always, the builder's and the grants' once an approval binds them.
    BlueprintMoved {
        id: u64,
        /// The derived tool name (`gen_{domain}_{action}`).
        name: String,
        from: Option<String>,
        to: String,
        /// Who moved it: an operator, an agent that proposed it, or the
        /// host (expiry).
        actor: String,
        reason: Option<String>,
        blueprint_sha256: String,
        builder_sha256: Option<String>,
        grants_sha256: Option<String>,
        /// The built component's digest, once there is one (absent from
        /// older records, which hash as they did).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        component_sha256: Option<String>,
    },
}

/// One chain's last record, as a [`AuditEvent::ChainHeads`] anchors it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    /// The chain (its host key's id).
    pub chain: String,
    pub seq: u64,
    /// The record's hash.
    pub hash: String,
}

/// One tool of a [`AuditEvent::DefinitionsPinned`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedTool {
    pub tool: String,
    /// `sha256:<hex>` of the definition's canonical JSON.
    pub digest: String,
}

/// Durable rules and the audit trail.
pub trait Journal: Send + Sync {
    /// Records a rule added by "always allow" (by an operator, or, with
    /// `by` none, the person behind the agent's client), audited in the
    /// same transaction.
    fn rule_added(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), JournalError>;
    /// Appends one audit record.
    fn audit(&self, event: &AuditEvent) -> Result<(), JournalError>;
    /// [`Journal::audit`] for the call path: a journal that batches
    /// appends lets the caller wait without holding a thread. Returns
    /// once the record is durable; true when it is not committed yet and
    /// the caller must arrange [`Journal::flush_async`] soon, as after
    /// [`Journal::audit_later`].
    fn audit_async<'a>(
        &'a self,
        event: &'a AuditEvent,
    ) -> crate::BoxFuture<'a, Result<bool, JournalError>> {
        Box::pin(std::future::ready(self.audit(event).map(|()| false)))
    }
    /// Appends one record nobody waits for (a call's outcome, whose
    /// answer may go out first): a batching journal queues it for its next
    /// commit and returns true when the caller must arrange
    /// [`Journal::flush_async`] soon. By default, [`Journal::audit`].
    fn audit_later(&self, event: &AuditEvent) -> Result<bool, JournalError> {
        self.audit(event).map(|()| false)
    }
    /// Commits what [`Journal::audit_later`] queued.
    fn flush_async(&self) -> crate::BoxFuture<'_, Result<(), JournalError>> {
        Box::pin(std::future::ready(Ok(())))
    }
    /// Whether decisions carry the arguments themselves (else a digest).
    fn audit_args(&self) -> bool {
        false
    }
    /// Makes everything appended so far verifiable with the public key
    /// alone (signs the chain's head if only a tag covers it): on a
    /// timer, and before the process exits.
    fn seal(&self) -> Result<(), JournalError> {
        Ok(())
    }
}
