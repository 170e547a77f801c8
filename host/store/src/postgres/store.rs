//! The [`Store`] interface on [`PgStore`]: each method runs its query
//! (`data.rs`, `audit.rs`) on the store's runtime.

use std::sync::atomic::Ordering;

use warden_api::{
    ApprovalAnswer, ApprovalRequest, Attribution, AuditEvent, BoxFuture, OpenApproval,
};
use warden_policy::CapabilityGrant;
use warden_signing::{PublicKey, SecretKey};

use super::{PgStore, anchor, audit, blueprints, data, gaps, pins, plugins, sessions};
use crate::chain::Entry;
use crate::interface::Closed;
use crate::{
    AuditRecord, Break, DefinitionPin, Store, StoreError, StoredRule, StoredTrust,
    StoredTrustChange, Verified, now_ms,
};
use crate::{BlueprintMove, BlueprintState, NewBlueprint, StoredBlueprint};
use crate::{GapRule, GapSummary, GapTally, NewGap, Others};
use crate::{PluginFiles, SharedPlugin};

impl Store for PgStore {
    fn location(&self) -> String {
        self.inner.location.clone()
    }

    fn shared(&self) -> bool {
        true
    }

    fn schema_version(&self) -> Result<u32, StoreError> {
        PgStore::schema_version(self)
    }

    fn audit_args(&self) -> bool {
        self.inner.audit_args.load(Ordering::Relaxed)
    }

    fn add_rule(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), StoreError> {
        let (agent, rule) = (agent.to_owned(), rule.to_owned());
        let (approval, by) = (approval.map(str::to_owned), by.cloned());
        self.run(|inner| data::add_rule(inner, agent, rule, approval, by))
    }

    fn rules(&self) -> Result<Vec<StoredRule>, StoreError> {
        self.run(data::rules)
    }

    fn approval_asked(&self, approval: &OpenApproval) -> Result<String, StoreError> {
        let approval = approval.clone();
        self.run(|inner| data::approval_asked(inner, approval))
    }

    fn approval_answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), StoreError> {
        let (request, answer, by) = (request.clone(), answer.clone(), by.to_owned());
        self.run(|inner| data::approval_answered(inner, request, answer, by, at_ms))
    }

    fn approval_closed(&self, id: &str, how: Closed, at_ms: u64) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.run(|inner| data::approval_closed(inner, id, how.as_str(), at_ms))
    }

    fn open_approvals(&self) -> Result<Vec<OpenApproval>, StoreError> {
        self.run(|inner| data::open_approvals(inner, None, None))
    }

    fn open_approval(&self, id: &str) -> Result<Option<OpenApproval>, StoreError> {
        let id = id.to_owned();
        self.run(|inner| async move {
            Ok(data::open_approvals(inner, Some(id), None)
                .await?
                .into_iter()
                .next())
        })
    }

    fn open_approval_by_key(&self, key: &str) -> Result<Option<OpenApproval>, StoreError> {
        let key = key.as_bytes().to_vec();
        self.run(|inner| async move {
            Ok(data::open_approvals(inner, None, Some(key))
                .await?
                .into_iter()
                .next_back())
        })
    }

    fn issue_grant(
        &self,
        grant: CapabilityGrant,
        by: Option<&Attribution>,
    ) -> Result<CapabilityGrant, StoreError> {
        let by = by.cloned();
        self.run(|inner| data::issue_grant(inner, grant, by))
    }

    fn revoke_grant(&self, id: &str, by: &Attribution) -> Result<CapabilityGrant, StoreError> {
        let (id, by) = (id.to_owned(), by.clone());
        self.run(|inner| data::revoke_grant(inner, id, by))
    }

    fn live_grants(&self, now_ms: u64) -> Result<Vec<CapabilityGrant>, StoreError> {
        self.run(|inner| data::live_grants(inner, now_ms))
    }

    fn all_grants(&self) -> Result<Vec<(CapabilityGrant, Option<u64>)>, StoreError> {
        self.run(data::all_grants)
    }

    fn grants_version(&self) -> Result<u64, StoreError> {
        self.run(data::grant_epoch)
    }

    fn trust(&self, agent: &str) -> Result<Option<StoredTrust>, StoreError> {
        let agent = agent.to_owned();
        self.run(|inner| data::trust(inner, agent))
    }

    fn put_trust(
        &self,
        agent: &str,
        prior: Option<&serde_json::Value>,
        state: &serde_json::Value,
        changes: &[AuditEvent],
    ) -> Result<bool, StoreError> {
        let (agent, prior, state, changes) = (
            agent.to_owned(),
            prior.cloned(),
            state.clone(),
            changes.to_vec(),
        );
        self.run(|inner| data::put_trust(inner, agent, prior, state, changes))
    }

    fn shared_plugins(&self) -> Result<Vec<SharedPlugin>, StoreError> {
        self.run(plugins::shared_plugins)
    }

    fn plugin_files(&self, name: &str, digest: &str) -> Result<Option<PluginFiles>, StoreError> {
        let (name, digest) = (name.to_owned(), digest.to_owned());
        self.run(|inner| plugins::plugin_files(inner, name, digest))
    }

    fn put_shared_plugin(
        &self,
        plugin: &SharedPlugin,
        files: Option<&PluginFiles>,
    ) -> Result<bool, StoreError> {
        let (plugin, files) = (plugin.clone(), files.cloned());
        self.run(|inner| plugins::put_shared_plugin(inner, plugin, files))
    }

    fn pin_definitions(&self, pins: &[DefinitionPin], by: &Attribution) -> Result<(), StoreError> {
        let (pins, by) = (pins.to_vec(), by.clone());
        self.run(|inner| pins::pin(inner, pins, by))
    }

    fn unpin_definitions(
        &self,
        server: &str,
        tools: &[String],
        by: &Attribution,
    ) -> Result<u64, StoreError> {
        let (server, tools, by) = (server.to_owned(), tools.to_vec(), by.clone());
        self.run(|inner| pins::unpin(inner, server, tools, by))
    }

    fn definition_pins(&self, server: Option<&str>) -> Result<Vec<DefinitionPin>, StoreError> {
        let server = server.map(str::to_owned);
        self.run(|inner| pins::pins(inner, server))
    }

    fn pinned_digest(&self, server: &str, tool: &str) -> Result<Option<String>, StoreError> {
        let (server, tool) = (server.to_owned(), tool.to_owned());
        self.run(|inner| pins::pinned_digest(inner, server, tool))
    }

    fn record_gap(&self, gap: &NewGap, rule: &GapRule) -> Result<GapTally, StoreError> {
        let (gap, rule) = (gap.clone(), *rule);
        self.run(|inner| gaps::record(inner, gap, rule))
    }

    fn gaps(&self, now_ms: u64, rule: &GapRule) -> Result<Vec<GapSummary>, StoreError> {
        let rule = *rule;
        self.run(move |inner| gaps::list(inner, now_ms, rule))
    }

    fn add_blueprint(&self, blueprint: &NewBlueprint) -> Result<StoredBlueprint, StoreError> {
        let blueprint = blueprint.clone();
        self.run(|inner| blueprints::add(inner, blueprint))
    }

    fn blueprints(&self) -> Result<Vec<StoredBlueprint>, StoreError> {
        self.run(blueprints::list)
    }

    fn blueprint(&self, id: u64) -> Result<Option<StoredBlueprint>, StoreError> {
        self.run(move |inner| blueprints::one(inner, id))
    }

    fn blueprint_states(&self) -> Result<Vec<BlueprintState>, StoreError> {
        self.run(blueprints::states)
    }

    fn touch_blueprint(&self, id: u64, state: &str, at_ms: u64) -> Result<bool, StoreError> {
        let state = state.to_owned();
        self.run(move |inner| blueprints::touch(inner, id, state, at_ms))
    }

    fn move_blueprints(&self, steps: &[BlueprintMove]) -> Result<Vec<StoredBlueprint>, StoreError> {
        let steps = steps.to_vec();
        self.run(|inner| blueprints::move_all(inner, steps))
    }

    fn blueprint_component(&self, id: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.run(move |inner| blueprints::component(inner, id))
    }

    fn put_session(
        &self,
        id: &str,
        state: &serde_json::Value,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        let (id, state) = (id.to_owned(), state.clone());
        self.run(|inner| sessions::put(inner, id, state, expires_ms))
    }

    fn session(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let id = id.to_owned();
        self.run(|inner| sessions::get(inner, id))
    }

    fn drop_session(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.run(|inner| sessions::drop(inner, id))
    }

    fn append_async<'a>(&'a self, event: &'a AuditEvent) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(
            async move { audit::append_queued(&self.inner, Entry::new(event, now_ms())?).await },
        )
    }

    fn append_later(&self, event: &AuditEvent) -> Result<bool, StoreError> {
        // The writer task commits it at once: no flush to arrange.
        audit::append_later(&self.inner, Entry::new(event, now_ms())?).map(|()| false)
    }

    fn flush_appends(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(audit::flush(&self.inner))
    }

    fn records_after(&self, after: u64, limit: u64) -> Result<Vec<AuditRecord>, StoreError> {
        self.run(|inner| async move {
            // What was queued before the read is part of the log it reads.
            audit::flush(&inner).await?;
            audit::records_after(inner, after, limit).await
        })
    }

    fn trust_changes(&self, limit: u64) -> Result<Vec<StoredTrustChange>, StoreError> {
        self.run(|inner| data::trust_changes(inner, limit))
    }

    fn tail(&self, n: u64) -> Result<Vec<AuditRecord>, StoreError> {
        self.run(|inner| async move {
            audit::flush(&inner).await?;
            let chain = inner.chain.clone();
            let last = audit::last_seq(&inner, &chain).await?;
            audit::records_after(inner, last.saturating_sub(n), n).await
        })
    }

    /// Anchors the other chains' heads when they moved, then signs this
    /// host's head (the anchor with it).
    fn seal(&self) -> Result<Option<u64>, StoreError> {
        self.run(|inner| async move {
            // Records queued without a waiter are part of what is sealed.
            audit::flush(&inner).await?;
            anchor::anchor(&inner).await?;
            audit::seal(inner).await
        })
    }

    fn verify_others(&self, root: Option<&PublicKey>) -> Result<Others, StoreError> {
        let root = root.cloned();
        self.run(|inner| anchor::verify_others(inner, root))
    }

    fn endorse(&self, endorsement: &str) -> Result<(), StoreError> {
        let endorsement = endorsement.to_owned();
        self.run(|inner| anchor::endorse(inner, endorsement))
    }

    fn verify(&self, key: &PublicKey) -> Result<Result<Verified, Break>, StoreError> {
        let key = key.clone();
        self.run(|inner| audit::verify(inner, key, None))
    }

    fn verify_with_host_key(&self, key: &SecretKey) -> Result<Result<Verified, Break>, StoreError> {
        let (public, tag_key) = (key.public(), crate::checkpoint::tag_key(key));
        self.run(|inner| async move {
            // Every committed record verifies with the host key: what was
            // queued before the call is committed, and checked, too.
            audit::flush(&inner).await?;
            audit::verify(inner, public, Some(tag_key)).await
        })
    }
}
