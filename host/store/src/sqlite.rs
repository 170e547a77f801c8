//! The [`Store`] interface on the embedded SQLite database
//! ([`SqliteStore`]): each method is the inherent one of the same name
//! (their files: `rules.rs`, `approvals.rs`, `grants.rs`, `trust.rs`,
//! `audit.rs`, `checkpoint.rs`, `verify.rs`).

use warden_api::{
    ApprovalAnswer, ApprovalRequest, Attribution, AuditEvent, BoxFuture, OpenApproval,
};
use warden_policy::CapabilityGrant;
use warden_signing::{PublicKey, SecretKey};

use crate::interface::Closed;
use crate::{
    AuditRecord, Break, DefinitionPin, SqliteStore, Store, StoreError, StoredRule, StoredTrust,
    StoredTrustChange, Verified,
};
use crate::{BlueprintMove, BlueprintState, NewBlueprint, StoredBlueprint};
use crate::{GapRule, GapSummary, GapTally, NewGap};
use crate::{PluginFiles, SharedPlugin};

impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path().display().to_string()
    }

    fn schema_version(&self) -> Result<u32, StoreError> {
        SqliteStore::schema_version(self)
    }

    fn audit_args(&self) -> bool {
        SqliteStore::audit_args(self)
    }

    fn add_rule(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), StoreError> {
        SqliteStore::add_rule(self, agent, rule, approval, by)
    }

    fn rules(&self) -> Result<Vec<StoredRule>, StoreError> {
        SqliteStore::rules(self)
    }

    fn approval_asked(&self, approval: &OpenApproval) -> Result<String, StoreError> {
        self.asked(approval)
    }

    fn approval_answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), StoreError> {
        self.answered(request, answer, by, at_ms)
    }

    fn approval_closed(&self, id: &str, how: Closed, at_ms: u64) -> Result<bool, StoreError> {
        self.close(id, how.as_str(), at_ms)
    }

    fn open_approvals(&self) -> Result<Vec<OpenApproval>, StoreError> {
        SqliteStore::open_approvals(self)
    }

    fn open_approval(&self, id: &str) -> Result<Option<OpenApproval>, StoreError> {
        self.open_approvals_where(Some(id), None)
            .map(|found| found.into_iter().next())
    }

    fn open_approval_by_key(&self, key: &str) -> Result<Option<OpenApproval>, StoreError> {
        self.open_approvals_where(None, Some(key))
            .map(|found| found.into_iter().next_back())
    }

    fn issue_grant(
        &self,
        grant: CapabilityGrant,
        by: Option<&Attribution>,
    ) -> Result<CapabilityGrant, StoreError> {
        SqliteStore::issue_grant(self, grant, by)
    }

    fn revoke_grant(&self, id: &str, by: &Attribution) -> Result<CapabilityGrant, StoreError> {
        SqliteStore::revoke_grant(self, id, by)
    }

    fn live_grants(&self, now_ms: u64) -> Result<Vec<CapabilityGrant>, StoreError> {
        SqliteStore::live_grants(self, now_ms)
    }

    fn all_grants(&self) -> Result<Vec<(CapabilityGrant, Option<u64>)>, StoreError> {
        SqliteStore::all_grants(self)
    }

    fn warm_up(&self) -> Result<(), StoreError> {
        SqliteStore::warm_up(self)
    }

    fn grants_version(&self) -> Result<u64, StoreError> {
        // Each part only grows, and every change moves one: their sum
        // changes whenever either does.
        let (data, own) = SqliteStore::grants_version(self)?;
        Ok((data as u64).wrapping_add(own))
    }

    fn trust(&self, agent: &str) -> Result<Option<StoredTrust>, StoreError> {
        SqliteStore::trust(self, agent)
    }

    fn trust_changes(&self, limit: u64) -> Result<Vec<StoredTrustChange>, StoreError> {
        SqliteStore::trust_changes(self, limit)
    }

    fn put_trust(
        &self,
        agent: &str,
        prior: Option<&serde_json::Value>,
        state: &serde_json::Value,
        changes: &[AuditEvent],
    ) -> Result<bool, StoreError> {
        SqliteStore::put_trust(self, agent, prior, state, changes)
    }

    fn shared_plugins(&self) -> Result<Vec<SharedPlugin>, StoreError> {
        SqliteStore::shared_plugins(self)
    }

    fn plugin_files(&self, name: &str, digest: &str) -> Result<Option<PluginFiles>, StoreError> {
        SqliteStore::plugin_files(self, name, digest)
    }

    fn put_shared_plugin(
        &self,
        plugin: &SharedPlugin,
        files: Option<&PluginFiles>,
    ) -> Result<bool, StoreError> {
        SqliteStore::put_shared_plugin(self, plugin, files)
    }

    fn pin_definitions(&self, pins: &[DefinitionPin], by: &Attribution) -> Result<(), StoreError> {
        SqliteStore::pin_definitions(self, pins, by)
    }

    fn unpin_definitions(
        &self,
        server: &str,
        tools: &[String],
        by: &Attribution,
    ) -> Result<u64, StoreError> {
        SqliteStore::unpin_definitions(self, server, tools, by)
    }

    fn definition_pins(&self, server: Option<&str>) -> Result<Vec<DefinitionPin>, StoreError> {
        SqliteStore::definition_pins(self, server)
    }

    fn pinned_digest(&self, server: &str, tool: &str) -> Result<Option<String>, StoreError> {
        SqliteStore::pinned_digest(self, server, tool)
    }

    fn record_gap(&self, gap: &NewGap, rule: &GapRule) -> Result<GapTally, StoreError> {
        SqliteStore::record_gap(self, gap, rule)
    }

    fn gaps(&self, now_ms: u64, rule: &GapRule) -> Result<Vec<GapSummary>, StoreError> {
        SqliteStore::gaps(self, now_ms, rule)
    }

    fn add_blueprint(&self, blueprint: &NewBlueprint) -> Result<StoredBlueprint, StoreError> {
        SqliteStore::add_blueprint(self, blueprint)
    }

    fn blueprints(&self) -> Result<Vec<StoredBlueprint>, StoreError> {
        SqliteStore::blueprints(self)
    }

    fn blueprint(&self, id: u64) -> Result<Option<StoredBlueprint>, StoreError> {
        SqliteStore::blueprint(self, id)
    }

    fn blueprint_states(&self) -> Result<Vec<BlueprintState>, StoreError> {
        SqliteStore::blueprint_states(self)
    }

    fn touch_blueprint(&self, id: u64, state: &str, at_ms: u64) -> Result<bool, StoreError> {
        SqliteStore::touch_blueprint(self, id, state, at_ms)
    }

    fn move_blueprints(&self, steps: &[BlueprintMove]) -> Result<Vec<StoredBlueprint>, StoreError> {
        SqliteStore::move_blueprints(self, steps)
    }

    fn blueprint_component(&self, id: u64) -> Result<Option<Vec<u8>>, StoreError> {
        SqliteStore::blueprint_component(self, id)
    }

    fn put_session(
        &self,
        id: &str,
        state: &serde_json::Value,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        SqliteStore::put_session(self, id, state, expires_ms)
    }

    fn session(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError> {
        SqliteStore::session(self, id)
    }

    fn drop_session(&self, id: &str) -> Result<(), StoreError> {
        SqliteStore::drop_session(self, id)
    }

    fn append_async<'a>(&'a self, event: &'a AuditEvent) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(SqliteStore::append_async(self, event))
    }

    fn append_later(&self, event: &AuditEvent) -> Result<bool, StoreError> {
        SqliteStore::append_later(self, event)
    }

    fn flush_appends(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(SqliteStore::flush_appends(self))
    }

    fn append_durable<'a>(
        &'a self,
        event: &'a AuditEvent,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(SqliteStore::append_durable(self, event))
    }

    fn records_after(&self, after: u64, limit: u64) -> Result<Vec<AuditRecord>, StoreError> {
        SqliteStore::records_after(self, after, limit)
    }

    fn tail(&self, n: u64) -> Result<Vec<AuditRecord>, StoreError> {
        SqliteStore::tail(self, n)
    }

    fn seal(&self) -> Result<Option<u64>, StoreError> {
        SqliteStore::seal(self)
    }

    fn checkpoint(&self) -> Result<(), StoreError> {
        SqliteStore::checkpoint(self)
    }

    fn verify(&self, key: &PublicKey) -> Result<Result<Verified, Break>, StoreError> {
        SqliteStore::verify(self, key)
    }

    fn verify_with_host_key(&self, key: &SecretKey) -> Result<Result<Verified, Break>, StoreError> {
        SqliteStore::verify_with_host_key(self, key)
    }
}
