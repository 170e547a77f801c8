//! The one interface over everything Warden keeps durably, whichever
//! database holds it: the embedded SQLite file of a single host
//! ([`SqliteStore`](crate::SqliteStore)) or a PostgreSQL server shared
//! by replicas. Callers hold an `Arc<dyn Store>`; a new kind of durable
//! state is a method here, written once per backend and checked by the
//! conformance suite (`tests/conformance`) against both.
//!
//! Every method is one transaction, committed before it returns: a caller
//! that reports a change done never loses it to a killed host. A change
//! that is audited (rules, answers, grants, trust levels) is audited in
//! its own transaction. Methods block their thread until the database
//! answered, as a local SQLite commit always did; the call path's one
//! hot write, the audit append, is also offered as a future
//! ([`Store::append_async`]) that waits without holding a thread.

use warden_api::{
    ApprovalAnswer, ApprovalRequest, Attribution, AuditEvent, BoxFuture, OpenApproval,
};
use warden_policy::CapabilityGrant;
use warden_signing::{PublicKey, SecretKey};

use crate::{
    AuditRecord, BlueprintMove, BlueprintState, Break, DefinitionPin, GapRule, GapSummary,
    GapTally, NewBlueprint, NewGap, Others, PluginFiles, SharedPlugin, StoreError, StoredBlueprint,
    StoredRule, StoredTrust, StoredTrustChange, Verified,
};

/// How an answered approval was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The agent's retry used the answer: it can never be used again.
    Consumed,
    /// The answer went stale unused.
    Dropped,
}

impl Closed {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Closed::Consumed => "consumed",
            Closed::Dropped => "dropped",
        }
    }
}

/// Warden's durable state. See the module documentation.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Where the state is kept, for messages: a file path, or a database
    /// URL without its password.
    fn location(&self) -> String;
    /// The schema version of the open database.
    fn schema_version(&self) -> Result<u32, StoreError>;
    /// Whether decisions carry the call's arguments (else their digest).
    fn audit_args(&self) -> bool;
    /// Whether other running hosts share this state (replicas on one
    /// database): what a host keeps in memory can go stale at any
    /// moment, so state that decides calls is read before each one.
    fn shared(&self) -> bool {
        false
    }

    /// Adds an allow rule (once; adding it again changes nothing) and
    /// audits it with who added it.
    fn add_rule(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), StoreError>;
    /// Every added rule, in the order added.
    fn rules(&self) -> Result<Vec<StoredRule>, StoreError>;

    /// Records a new pending approval under a new id `ap-N`, unique
    /// among every process sharing the database (the request's own id is
    /// ignored); returns that id.
    fn approval_asked(&self, approval: &OpenApproval) -> Result<String, StoreError>;
    /// A person's answer (or an expiry's denial) to a pending approval,
    /// audited; `by` says who answered. An approval that is not pending
    /// is an error and nothing changes.
    fn approval_answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), StoreError>;
    /// Closes an answered approval; true when it did (an approval in any
    /// other state is left as it is: false). Of processes racing to use
    /// one answer, exactly one is told true.
    fn approval_closed(&self, id: &str, how: Closed, at_ms: u64) -> Result<bool, StoreError>;
    /// Approvals waiting for an answer or for a retry, oldest first.
    fn open_approvals(&self) -> Result<Vec<OpenApproval>, StoreError>;
    /// The approval `id` while it waits for an answer or for a retry.
    fn open_approval(&self, id: &str) -> Result<Option<OpenApproval>, StoreError>;
    /// The newest approval of the call bound by `key` while it waits for
    /// an answer or for a retry.
    fn open_approval_by_key(&self, key: &str) -> Result<Option<OpenApproval>, StoreError>;

    /// Stores `grant` under a new id (`g-N`; its `id` is ignored), audited
    /// with `by` when an operator issued it; returns it as stored.
    fn issue_grant(
        &self,
        grant: CapabilityGrant,
        by: Option<&Attribution>,
    ) -> Result<CapabilityGrant, StoreError>;
    /// Revokes a grant not already revoked, on `by`'s word, audited.
    fn revoke_grant(&self, id: &str, by: &Attribution) -> Result<CapabilityGrant, StoreError>;
    /// Grants neither revoked nor expired at `now_ms` (including ones
    /// that start later), oldest first.
    fn live_grants(&self, now_ms: u64) -> Result<Vec<CapabilityGrant>, StoreError>;
    /// Every grant ever issued, oldest first, with when it was revoked.
    fn all_grants(&self) -> Result<Vec<(CapabilityGrant, Option<u64>)>, StoreError>;
    /// A number that changes whenever grants may have changed, by this
    /// process or any other: cheap to poll before trusting a cache.
    fn grants_version(&self) -> Result<u64, StoreError>;
    /// Does the one-time work a run's first write would otherwise pay
    /// for, so a host can do it beside its start instead of in its first
    /// call; changes no data. Nothing for stores without such work.
    fn warm_up(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// An agent's stored trust state.
    fn trust(&self, agent: &str) -> Result<Option<StoredTrust>, StoreError>;
    /// The newest `limit` trust changes of all agents (each written with
    /// its `put_trust`), newest first.
    fn trust_changes(&self, limit: u64) -> Result<Vec<StoredTrustChange>, StoreError>;
    /// Replaces an agent's trust state, when the stored one is still
    /// `prior` (`None`: nothing stored yet); `changes` are audited with
    /// it. `false`: another process changed it since, and nothing was
    /// written (read it again and start from there).
    fn put_trust(
        &self,
        agent: &str,
        prior: Option<&serde_json::Value>,
        state: &serde_json::Value,
        changes: &[AuditEvent],
    ) -> Result<bool, StoreError>;

    /// The deployment's installed plugins and removals, by name
    /// (`plugins.rs`), without their files.
    fn shared_plugins(&self) -> Result<Vec<SharedPlugin>, StoreError>;
    /// The files of plugin `name` as installed with `digest`.
    fn plugin_files(&self, name: &str, digest: &str) -> Result<Option<PluginFiles>, StoreError>;
    /// Records an install (with its files) or a removal (`digest` and
    /// `files` `None`) of `plugin.name`, unless a newer change of that
    /// name is stored. Returns whether it was written.
    fn put_shared_plugin(
        &self,
        plugin: &SharedPlugin,
        files: Option<&PluginFiles>,
    ) -> Result<bool, StoreError>;

    /// Pins each of `pins` (its `approved_ms` and `by` are the store's to
    /// set), replacing an earlier pin of the same server and tool;
    /// audited, one record per server.
    fn pin_definitions(&self, pins: &[DefinitionPin], by: &Attribution) -> Result<(), StoreError>;
    /// Removes the pins of `tools` of `server` (all of its pins when
    /// `tools` is empty); returns how many went. Audited when any did.
    fn unpin_definitions(
        &self,
        server: &str,
        tools: &[String],
        by: &Attribution,
    ) -> Result<u64, StoreError>;
    /// The pins of `server` (of every server for `None`), by server and
    /// tool.
    fn definition_pins(&self, server: Option<&str>) -> Result<Vec<DefinitionPin>, StoreError>;
    /// The digest pinned for `tool` of `server`, if any: what every call
    /// of a bridged tool checks, one row by its key, the definition not
    /// read.
    fn pinned_digest(&self, server: &str, tool: &str) -> Result<Option<String>, StoreError>;

    /// Records an unfulfilled request in the gap log (a ring of
    /// `rule.capacity` rows) and tallies its signature in `rule.window_ms`;
    /// audits the signature the first time in a window it is recurring.
    fn record_gap(&self, gap: &NewGap, rule: &GapRule) -> Result<GapTally, StoreError>;
    /// The signatures asked for within `rule.window_ms` before `now_ms`.
    fn gaps(&self, now_ms: u64, rule: &GapRule) -> Result<Vec<GapSummary>, StoreError>;

    /// Keeps a proposed blueprint as `pending`, audited
    /// (`blueprint-moved`, from nothing).
    fn add_blueprint(&self, blueprint: &NewBlueprint) -> Result<StoredBlueprint, StoreError>;
    /// Every blueprint, newest first.
    fn blueprints(&self) -> Result<Vec<StoredBlueprint>, StoreError>;
    fn blueprint(&self, id: u64) -> Result<Option<StoredBlueprint>, StoreError>;
    /// Where every blueprint stands, newest first, without the texts.
    fn blueprint_states(&self) -> Result<Vec<BlueprintState>, StoreError>;
    /// Sets blueprint `id`'s `updated_ms` to `at_ms` while it is in
    /// `state` (a host building or validating it says it still does),
    /// unaudited; false when it is not in `state` (it moved on, or
    /// another host failed it).
    fn touch_blueprint(&self, id: u64, state: &str, at_ms: u64) -> Result<bool, StoreError>;
    /// Moves a blueprint from `from` to `to` (failing when it is not in
    /// `from`), audited with its digests in the same transaction. Which
    /// moves are legal is the caller's to check.
    fn move_blueprint(&self, step: &BlueprintMove) -> Result<StoredBlueprint, StoreError> {
        self.move_blueprints(std::slice::from_ref(step))?
            .pop()
            .ok_or(StoreError::NoSuchBlueprint(step.id))
    }
    /// Several moves in one transaction: all land or none does (an
    /// activation that supersedes the version before it). A move with an
    /// artifact keeps it (and the component's bytes) with the row.
    fn move_blueprints(&self, steps: &[BlueprintMove]) -> Result<Vec<StoredBlueprint>, StoreError>;
    /// The component built for blueprint `id`, if one was kept.
    fn blueprint_component(&self, id: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// Keeps an MCP session's state (what its client's `initialize`
    /// said) until `expires_ms`, replacing any kept under `id`; clears
    /// the sessions that expired.
    fn put_session(
        &self,
        id: &str,
        state: &serde_json::Value,
        expires_ms: u64,
    ) -> Result<(), StoreError>;
    /// The state kept for session `id`, unless it expired.
    fn session(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError>;
    /// Forgets session `id` (its client ended it).
    fn drop_session(&self, id: &str) -> Result<(), StoreError>;

    /// Appends one audit record; returns its sequence number once it is
    /// committed. Concurrent appends may share a commit.
    fn append_async<'a>(&'a self, event: &'a AuditEvent) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// Queues one audit record for the next commit without waiting for
    /// it, for a record no answer waits on (a call's outcome). Returns
    /// true when the caller must arrange [`Store::flush_appends`] soon,
    /// or the record could stay queued until the next append.
    fn append_later(&self, event: &AuditEvent) -> Result<bool, StoreError>;
    /// Commits what [`Store::append_later`] queued.
    fn flush_appends(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Appends one audit record and returns once it is durable; true
    /// when the caller must arrange [`Store::flush_appends`] soon (the
    /// record is durable but not committed yet). By default,
    /// [`Store::append_async`].
    fn append_durable<'a>(
        &'a self,
        event: &'a AuditEvent,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.append_async(event).await.map(|_| false) })
    }
    /// [`Store::append_async`], waiting on this thread.
    fn append(&self, event: &AuditEvent) -> Result<u64, StoreError> {
        crate::writer::block_on(self.append_async(event))
    }
    /// Records with `seq > after`, oldest first, at most `limit`.
    fn records_after(&self, after: u64, limit: u64) -> Result<Vec<AuditRecord>, StoreError>;
    /// The last `n` records, oldest first.
    fn tail(&self, n: u64) -> Result<Vec<AuditRecord>, StoreError>;
    /// Signs the chain's head if it carries no signature yet; returns the
    /// sequence number signed. A head this host did not cover is refused.
    fn seal(&self) -> Result<Option<u64>, StoreError>;
    /// Moves everything committed into the database proper, so the next
    /// open has nothing to replay (a long run's write-ahead log took a
    /// start tens of milliseconds to read back), and commits and removes
    /// the pending audit log (appends after it commit before they
    /// return). A host calls it when it stops. A database server keeps
    /// its own log: nothing to do there.
    fn checkpoint(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Walks the whole chain against the public key: every record's
    /// hash, position and link, every signature, and a signed end.
    fn verify(&self, key: &PublicKey) -> Result<Result<Verified, Break>, StoreError>;
    /// [`Store::verify`] with the host key: tags are checked too, and a
    /// tagged end suffices.
    fn verify_with_host_key(&self, key: &SecretKey) -> Result<Result<Verified, Break>, StoreError>;
    /// The other hosts' chains in a shared database, each walked against
    /// the public key registered with it, and every anchor any chain
    /// holds of another chain's head checked (`anchors.rs`). A single
    /// host's database holds one chain: nothing to check. With the
    /// deployment's audit `root`, every chain's key (this host's too) must
    /// carry the root's endorsement.
    fn verify_others(&self, root: Option<&PublicKey>) -> Result<Others, StoreError> {
        let _ = root;
        Ok(Others::default())
    }
    /// Registers the audit root's endorsement of this host's key with its
    /// chain (`warden_signing::endorse_audit_key`). Only a database that
    /// replicas share holds more than one chain to tell apart.
    fn endorse(&self, endorsement: &str) -> Result<(), StoreError> {
        let _ = endorsement;
        Err(StoreError::Database {
            location: "the state database".into(),
            detail: "audit root endorsements are for replicas sharing a PostgreSQL database \
                     (`[state] url`); a single host's database holds one chain"
                .into(),
        })
    }
}
