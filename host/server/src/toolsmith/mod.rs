//! The toolsmith's blueprints behind the operator: proposing one,
//! showing a person what they would approve, and the `tool:create`
//! approval itself.
//!
//! Attack: a tool created without a person, or other than the one the
//! person saw. A proposal (from an agent's `toolsmith_propose` or an
//! operator's `warden toolsmith propose`) only ever lands as `pending`;
//! only an operator channel (`warden toolsmith approve`, the admin API)
//! moves it on, with the guardrail's actor, confirmation and reason; no
//! rule, mode or "always allow" reaches it. The approval is bound to the
//! digests of the blueprint, the builder and the resolved grants, and
//! [`Toolsmith::approved_for_build`] voids it when any of them changed
//! since. A proposal nobody answers is rejected when its time is up.

use std::sync::Arc;

use serde::Serialize;
use warden_api::{Attribution, Clock};
use warden_store::{
    BlueprintMove, BlueprintState, NewBlueprint, Store, StoreError, StoredBlueprint,
};
use warden_toolsmith::{Binding, Blueprint, DeriveFrom, Derived, Limits, State};

use crate::gaps::ToolsmithConfig;
use crate::{Config, ServerError};

mod author;
mod builder;
mod component;
mod forge;
mod generated;
mod sampling;
mod validate;

pub use author::{AUTHOR_QUEUE, AuthorCommand, author_recurring};
pub use builder::{builder_digest, builder_recipe};
pub use component::{
    LazyRuntime, check_component, fits_grants, fuel_config, fuel_runtime, identity,
};
pub use forge::{ComponentBuilder, DockerBuilder, Forge, toolsmith_key, verify_all, verify_one};
pub use generated::{Artifact, Generated, STATEMENT_KIND, Statement};
pub use sampling::SamplingDesk;
pub use validate::{Checked, Report};

/// The blueprints of one store under one configuration.
pub struct Toolsmith {
    store: Arc<dyn Store>,
    config: ToolsmithConfig,
    action_types: Vec<String>,
    clock: Arc<dyn Clock>,
    /// Woken by an approval or a retirement made here, so a running
    /// host acts at once.
    changed: Arc<tokio::sync::Notify>,
    /// The toolsmith key, for what checks signed statements here.
    key: Option<Arc<warden_signing::SecretKey>>,
}

impl std::fmt::Debug for Toolsmith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolsmith").finish_non_exhaustive()
    }
}

/// What a person sees before approving: everything derived, the grants
/// in words, the source and the cases, and the digests an approval
/// would be bound to.
#[derive(Debug, Clone, Serialize)]
pub struct BlueprintView {
    pub id: u64,
    pub state: String,
    pub author: String,
    pub derived: Derived,
    pub grants_in_words: Vec<String>,
    pub blueprint: Blueprint,
    /// The digests as they are now.
    pub binding: Binding,
    /// The approval's digests, once approved.
    pub approved: Option<Binding>,
    /// What changed since the approval (empty: it holds).
    pub changed_since_approval: Vec<&'static str>,
    pub actor: Option<String>,
    pub reason: Option<String>,
    pub created_ms: u64,
    pub expires_ms: u64,
    /// The validation report (every call: kind, tool, case, passed,
    /// detail, microseconds), once validated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<serde_json::Value>,
}

fn text_digest(text: &str) -> String {
    warden_signing::sha256_digest(text.as_bytes())
}

impl Toolsmith {
    pub fn new(store: Arc<dyn Store>, config: &Config, clock: Arc<dyn Clock>) -> Toolsmith {
        Toolsmith {
            store,
            config: config.toolsmith.clone(),
            action_types: config.action_types.clone(),
            clock,
            changed: Arc::new(tokio::sync::Notify::new()),
            key: None,
        }
    }

    /// This toolsmith with the toolsmith key (rollbacks and `verify`
    /// through the admin API need it), shared with the host's [`Forge`].
    pub fn with_key(mut self, key: Arc<warden_signing::SecretKey>) -> Toolsmith {
        self.key = Some(key);
        self
    }

    fn limits(&self) -> Limits {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Limits {
            max_source_bytes: size(self.config.max_source_bytes),
            max_component_bytes: size(self.config.max_component_bytes),
        }
    }

    fn derive(&self, blueprint: &Blueprint) -> Result<Derived, ServerError> {
        let known_action = |a: &str| {
            warden_api::BUILTIN_ACTION_TYPES.contains(&a)
                || self.action_types.iter().any(|t| t == a)
        };
        let known_category = |c: &str| c.parse::<warden_api::Category>().is_ok();
        Ok(warden_toolsmith::derive(
            blueprint,
            &DeriveFrom {
                sandbox: &self.config.sandbox,
                category: self.config.category.as_deref(),
                capabilities: &self.config.capabilities,
                known_action: &known_action,
                known_category: &known_category,
            },
        )?)
    }

    /// The digests an approval of `stored` would be bound to now.
    fn binding(&self, stored: &StoredBlueprint) -> Binding {
        Binding {
            blueprint: text_digest(&stored.blueprint),
            builder: builder_digest(),
            grants: text_digest(&self.config.sandbox.canonical()),
        }
    }

    /// Reads, checks and derives a blueprint and keeps it as `pending`.
    /// `author` is who proposed it (`agent:ID`, `operator:NAME`).
    pub fn propose(&self, text: &str, author: &str) -> Result<StoredBlueprint, ServerError> {
        self.config
            .sandbox
            .check()
            .map_err(|(at, m)| ServerError::config(at, m))?;
        let blueprint = Blueprint::parse(text, &self.limits())?;
        self.keep(&blueprint, author)
    }

    /// [`Toolsmith::propose`] for a blueprint given as JSON (an MCP
    /// tool's argument).
    pub fn propose_value(
        &self,
        value: serde_json::Value,
        author: &str,
    ) -> Result<StoredBlueprint, ServerError> {
        let blueprint = Blueprint::from_value(value, &self.limits())?;
        self.keep(&blueprint, author)
    }

    fn keep(&self, blueprint: &Blueprint, author: &str) -> Result<StoredBlueprint, ServerError> {
        let derived = self.derive(blueprint)?;
        let canonical = blueprint.canonical();
        let now = self.clock.now_ms();
        // A gap the host recorded: the tool must serve such a request.
        if blueprint.witness.is_none() {
            let rule = self.config.gap_rule()?;
            if let Some(gap) = self
                .store
                .gaps(now, &rule)?
                .into_iter()
                .find(|g| g.signature == derived.capability)
            {
                return Err(ServerError::Blueprint(
                    warden_toolsmith::BlueprintError::Invalid {
                        what: "witness".into(),
                        reason: format!(
                            "agents asked for `{}` {} times (as {}): add `witness`, the arguments \
                             of such a request as the agent would pass them; validation calls the \
                             tool with them and the call must succeed",
                            gap.signature,
                            gap.occurrences,
                            gap.asked.join(", ")
                        ),
                    },
                ));
            }
        }
        // One author flooding the store and the operators' queue.
        let day_ago = now.saturating_sub(24 * 60 * 60 * 1000);
        let recent = self
            .store
            .blueprint_states()?
            .iter()
            .filter(|b| b.author == author && b.created_ms > day_ago)
            .count() as u64;
        if recent >= self.config.max_blueprints_per_day {
            return Err(ServerError::TooManyBlueprints(format!(
                "not kept: {author} proposed {recent} blueprints within a day, the most \
                 `[toolsmith] max-blueprints-per-day` allows"
            )));
        }
        let ttl_ms = self.config.approval_ttl_secs.saturating_mul(1000);
        Ok(self.store.add_blueprint(&NewBlueprint {
            name: derived.name.clone(),
            capability: derived.capability.clone(),
            author: author.to_owned(),
            blueprint_sha256: text_digest(&canonical),
            blueprint: canonical,
            derived: serde_json::to_string(&derived).unwrap_or_default(),
            at_ms: now,
            expires_ms: now.saturating_add(ttl_ms),
        })?)
    }

    /// Rejects the pending blueprints whose time is up; their ids.
    pub fn expire(&self) -> Result<Vec<u64>, ServerError> {
        let now = self.clock.now_ms();
        let mut expired = Vec::new();
        for b in self.store.blueprint_states()? {
            if b.state == State::Pending.as_str() && b.expires_ms <= now {
                let moved = self.store.move_blueprint(&BlueprintMove {
                    id: b.id,
                    from: b.state.clone(),
                    to: State::Rejected.as_str().into(),
                    actor: "host".into(),
                    reason: Some("expired without an answer".into()),
                    approval: None,
                    keep_approval: false,
                    builder_sha256: None,
                    grants_sha256: None,
                    artifact: None,
                    at_ms: now,
                });
                match moved {
                    Ok(_) => expired.push(b.id),
                    // Answered in the meantime.
                    Err(StoreError::BlueprintMoved { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(expired)
    }

    /// Every blueprint, newest first (expired ones rejected first).
    pub fn list(&self) -> Result<Vec<StoredBlueprint>, ServerError> {
        self.expire()?;
        Ok(self.store.blueprints()?)
    }

    fn stored(&self, id: u64) -> Result<StoredBlueprint, ServerError> {
        self.store.blueprint(id)?.ok_or(ServerError::Toolsmith {
            id,
            message: "there is no such blueprint".into(),
        })
    }

    /// What a person sees before answering.
    pub fn show(&self, id: u64) -> Result<BlueprintView, ServerError> {
        self.expire()?;
        let stored = self.stored(id)?;
        // Read strictly again: what is shown is what would be built.
        let blueprint = Blueprint::parse(&stored.blueprint, &self.limits())?;
        let derived = self.derive(&blueprint)?;
        let binding = self.binding(&stored);
        let approved = approval_of(&stored)?;
        let changed = approved
            .as_ref()
            .map(|a| a.changed(&binding))
            .unwrap_or_default();
        Ok(BlueprintView {
            id,
            state: stored.state.clone(),
            author: stored.author.clone(),
            grants_in_words: derived.grants.in_words(),
            derived,
            blueprint,
            binding,
            approved,
            changed_since_approval: changed,
            actor: stored.actor.clone(),
            reason: stored.reason.clone(),
            created_ms: stored.created_ms,
            expires_ms: stored.expires_ms,
            report: stored
                .artifact
                .as_deref()
                .and_then(|text| generated::Artifact::parse(text).ok())
                .map(|artifact| artifact.report),
        })
    }

    fn step(
        &self,
        stored: &StoredBlueprint,
        to: State,
        by: &str,
        reason: Option<String>,
        approval: Option<&Binding>,
    ) -> Result<StoredBlueprint, ServerError> {
        let step = BlueprintMove {
            approval: approval.map(|a| serde_json::to_string(a).unwrap_or_default()),
            keep_approval: false,
            ..self.transition(stored, to, by, reason)?
        };
        Ok(self.store.move_blueprint(&step)?)
    }

    /// The move of `stored` to `to` (checked legal), keeping its
    /// approval, with today's digests; for the caller to adjust and make.
    pub(crate) fn transition(
        &self,
        stored: &StoredBlueprint,
        to: State,
        by: &str,
        reason: Option<String>,
    ) -> Result<BlueprintMove, ServerError> {
        let from = State::parse(&stored.state).ok_or_else(|| ServerError::Toolsmith {
            id: stored.id,
            message: format!("its stored state `{}` is unknown", stored.state),
        })?;
        from.check_move(to).map_err(|e| ServerError::Toolsmith {
            id: stored.id,
            message: e.to_string(),
        })?;
        let binding = self.binding(stored);
        Ok(BlueprintMove {
            id: stored.id,
            from: from.as_str().into(),
            to: to.as_str().into(),
            actor: by.to_owned(),
            reason,
            approval: None,
            keep_approval: true,
            builder_sha256: Some(binding.builder),
            grants_sha256: Some(binding.grants),
            artifact: None,
            at_ms: self.clock.now_ms(),
        })
    }

    /// Makes `steps` in one transaction.
    pub(crate) fn apply(
        &self,
        steps: &[BlueprintMove],
    ) -> Result<Vec<StoredBlueprint>, ServerError> {
        Ok(self.store.move_blueprints(steps)?)
    }

    /// Fails every blueprint left `building`, `validating` or
    /// `validated` by a host that stopped: nobody said it works on it
    /// for `lease`. A build going on here or on another host is left
    /// alone. (`validated` lasts only until its host's activation, the
    /// next store transaction; one still there after the lease was left
    /// by a host killed in between, and nobody else activates it.)
    pub(crate) fn fail_abandoned(&self, lease: std::time::Duration) -> Result<(), ServerError> {
        let now = self.now_ms();
        let lease = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        for b in self.store.blueprint_states()? {
            let in_flight = [State::Building, State::Validating, State::Validated]
                .iter()
                .any(|s| b.state == s.as_str());
            if !in_flight || now.saturating_sub(b.updated_ms) < lease {
                continue;
            }
            let Some(stored) = self.store.blueprint(b.id)? else {
                continue;
            };
            let reason = format!(
                "interrupted: the host stopped while it was {} (no word from it for {} s)",
                b.state,
                now.saturating_sub(b.updated_ms) / 1000
            );
            let step = self.transition(&stored, State::Failed, "host", Some(reason))?;
            // A host racing this one may have failed it first: the
            // move then finds it moved, and it is not failed twice.
            if let Err(e) = self.apply(&[step]) {
                tracing::warn!(id = b.id, error = %e, "an interrupted blueprint was not failed");
            }
        }
        Ok(())
    }

    /// The time on this toolsmith's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The store these blueprints live in.
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The blueprints whose standing `keep` picks, newest first: where
    /// they all stand is read, and only the picked ones whole (a stored
    /// blueprint can carry a component).
    pub(crate) fn blueprints_where(
        &self,
        keep: impl Fn(&BlueprintState) -> bool,
    ) -> Result<Vec<StoredBlueprint>, StoreError> {
        let mut picked = Vec::new();
        for head in self.store.blueprint_states()? {
            if keep(&head)
                && let Some(b) = self.store.blueprint(head.id)?
            {
                picked.push(b);
            }
        }
        Ok(picked)
    }

    /// A stored blueprint read strictly again, and what the host derives
    /// from it under today's configuration.
    pub(crate) fn read(
        &self,
        stored: &StoredBlueprint,
    ) -> Result<(Blueprint, Derived), ServerError> {
        let blueprint = Blueprint::parse(&stored.blueprint, &self.limits())?;
        let derived = self.derive(&blueprint)?;
        Ok((blueprint, derived))
    }

    /// The digest of the grants generated tools get now.
    pub(crate) fn grants_digest(&self) -> String {
        text_digest(&self.config.sandbox.canonical())
    }

    /// Retires the active version of tool `name` (hidden, its digest no
    /// longer loaded); with `rollback`, the version it superseded becomes
    /// active again in the same transaction, once `verify` (its signed
    /// statement against its stored bytes) passes. A running host makes
    /// its live tools match within seconds; calls in flight finish.
    pub fn retire(
        &self,
        name: &str,
        by: &Attribution,
        rollback: bool,
        verify: &dyn Fn(&StoredBlueprint) -> Result<(), String>,
    ) -> Result<Vec<StoredBlueprint>, ServerError> {
        let all = self.blueprints_where(|b| {
            b.name == name
                && (b.state == State::Active.as_str() || b.state == State::Superseded.as_str())
        })?;
        let unknown = |message: String| ServerError::Toolsmith { id: 0, message };
        let active = all
            .iter()
            .find(|b| b.name == name && b.state == State::Active.as_str())
            .ok_or_else(|| unknown(format!("no version of `{name}` is active")))?;
        let actor = format!("operator:{}", by.actor);
        let mut steps = vec![self.transition(active, State::Retired, &actor, by.reason.clone())?];
        if rollback {
            // Newest first: the version this one superseded.
            let previous = all
                .iter()
                .find(|b| b.name == name && b.state == State::Superseded.as_str())
                .ok_or_else(|| {
                    unknown(format!("`{name}` has no earlier version to roll back to"))
                })?;
            verify(previous).map_err(|problem| ServerError::Toolsmith {
                id: previous.id,
                message: format!("not rolled back to: {problem}"),
            })?;
            steps.push(self.transition(
                previous,
                State::Active,
                &actor,
                Some(format!("rollback from blueprint {}", active.id)),
            )?);
        }
        self.apply(&steps)
    }

    /// The `tool:create` approval, from an operator channel only. When
    /// `seen` is given it must be the blueprint digest the person looked
    /// at. The approval is bound to the blueprint, builder and grants
    /// digests as they are now.
    pub fn approve(
        &self,
        id: u64,
        by: &Attribution,
        seen: Option<&str>,
    ) -> Result<StoredBlueprint, ServerError> {
        self.expire()?;
        let stored = self.stored(id)?;
        // Strictly read and derivable under today's config, or nothing.
        let blueprint = Blueprint::parse(&stored.blueprint, &self.limits())?;
        self.derive(&blueprint)?;
        let binding = self.binding(&stored);
        if let Some(seen) = seen
            && seen != binding.blueprint
        {
            return Err(ServerError::Toolsmith {
                id,
                message: format!(
                    "it is not the blueprint you saw: its digest is {}, not {seen}",
                    binding.blueprint
                ),
            });
        }
        if binding.blueprint != stored.blueprint_sha256 {
            return Err(ServerError::Toolsmith {
                id,
                message: "its stored text does not match its digest".into(),
            });
        }
        let approved = self.step(
            &stored,
            State::Approved,
            &format!("operator:{}", by.actor),
            by.reason.clone(),
            Some(&binding),
        )?;
        self.changed.notify_one();
        Ok(approved)
    }

    /// Woken when an operator approves or retires here.
    pub(crate) fn changes(&self) -> Arc<tokio::sync::Notify> {
        self.changed.clone()
    }

    /// Refuses a blueprint (pending, or approved and not yet built).
    pub fn reject(&self, id: u64, by: &Attribution) -> Result<StoredBlueprint, ServerError> {
        let stored = self.stored(id)?;
        self.step(
            &stored,
            State::Rejected,
            &format!("operator:{}", by.actor),
            by.reason.clone(),
            None,
        )
    }

    /// What the builder asks before it builds anything: the blueprint is
    /// `approved` and its approval still holds. When any digest changed
    /// since, the approval is void: the blueprint goes back to `pending`
    /// (audited with what changed) and the answer is an error.
    pub fn approved_for_build(&self, id: u64) -> Result<StoredBlueprint, ServerError> {
        let stored = self.stored(id)?;
        if stored.state != State::Approved.as_str() {
            return Err(ServerError::Toolsmith {
                id,
                message: format!("it is {}, not approved: nothing is built", stored.state),
            });
        }
        let approved = approval_of(&stored)?.ok_or_else(|| ServerError::Toolsmith {
            id,
            message: "it carries no approval".into(),
        })?;
        let now = self.binding(&stored);
        let changed = approved.changed(&now);
        if changed.is_empty() {
            return Ok(stored);
        }
        let what = changed.join(", ");
        self.step(
            &stored,
            State::Pending,
            "host",
            Some(format!(
                "approval voided: {what} changed since it was given"
            )),
            None,
        )?;
        Err(ServerError::Toolsmith {
            id,
            message: format!(
                "its approval is void ({what} changed since it was given); it waits for a person again"
            ),
        })
    }
}

/// One line of the blueprint list (the CLI's and the admin API's).
pub fn summary(b: &StoredBlueprint) -> serde_json::Value {
    serde_json::json!({
        "id": b.id, "name": b.name, "capability": b.capability,
        "state": b.state, "author": b.author,
        "blueprint_sha256": b.blueprint_sha256,
        "approval": b.approval.as_deref().and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok()),
        "actor": b.actor, "reason": b.reason,
        "created_ms": b.created_ms, "updated_ms": b.updated_ms,
        "expires_ms": b.expires_ms,
    })
}

fn admin_error(e: ServerError) -> warden_api::AdminError {
    match e {
        ServerError::Toolsmith { .. }
        | ServerError::Blueprint(_)
        | ServerError::TooManyBlueprints(_)
        | ServerError::Store(StoreError::BlueprintMoved { .. }) => {
            warden_api::AdminError::Refused(e.to_string())
        }
        e => warden_api::AdminError::failed("the toolsmith's blueprints", e),
    }
}

impl warden_api::ToolsmithAdmin for Toolsmith {
    fn blueprints(&self) -> Result<serde_json::Value, warden_api::AdminError> {
        let listed: Vec<_> = self
            .list()
            .map_err(admin_error)?
            .iter()
            .map(summary)
            .collect();
        Ok(serde_json::json!({ "blueprints": listed }))
    }

    fn show(&self, id: u64) -> Result<serde_json::Value, warden_api::AdminError> {
        let view = Toolsmith::show(self, id).map_err(admin_error)?;
        serde_json::to_value(view)
            .map_err(|e| warden_api::AdminError::failed("showing a blueprint", e))
    }

    fn approve(
        &self,
        id: u64,
        seen: Option<String>,
        by: Attribution,
    ) -> Result<serde_json::Value, warden_api::AdminError> {
        let stored = Toolsmith::approve(self, id, &by, seen.as_deref()).map_err(admin_error)?;
        Ok(summary(&stored))
    }

    fn reject(
        &self,
        id: u64,
        by: Attribution,
    ) -> Result<serde_json::Value, warden_api::AdminError> {
        let stored = Toolsmith::reject(self, id, &by).map_err(admin_error)?;
        Ok(summary(&stored))
    }

    fn retire(
        &self,
        name: &str,
        rollback: bool,
        by: Attribution,
    ) -> Result<serde_json::Value, warden_api::AdminError> {
        let key = self.key.as_ref();
        let verify = |b: &StoredBlueprint| match key {
            Some(key) => forge::verify_one(self, b, key),
            None => Err("this host holds no toolsmith key".into()),
        };
        let moved = Toolsmith::retire(self, name, &by, rollback, &verify).map_err(admin_error)?;
        self.changed.notify_one();
        Ok(serde_json::json!({ "moved": moved.iter().map(summary).collect::<Vec<_>>() }))
    }

    fn verify(&self) -> Result<serde_json::Value, warden_api::AdminError> {
        let key = self.key.as_ref().ok_or_else(|| {
            warden_api::AdminError::Refused("this host holds no toolsmith key".into())
        })?;
        let checked = forge::verify_all(self, key).map_err(admin_error)?;
        let all = checked.iter().all(|c| c["verified"] == true);
        Ok(serde_json::json!({ "verified": all, "blueprints": checked }))
    }
}

impl warden_api::BlueprintDesk for Toolsmith {
    fn propose(
        &self,
        agent: &str,
        _session: &str,
        blueprint: serde_json::Value,
    ) -> Result<warden_api::ProposedBlueprint, warden_api::ProposalRefused> {
        let refused = |e: ServerError| warden_api::ProposalRefused {
            message: e.to_string(),
        };
        self.expire().map_err(refused)?;
        let stored = self
            .propose_value(blueprint, &format!("agent:{agent}"))
            .map_err(refused)?;
        Ok(warden_api::ProposedBlueprint {
            id: stored.id,
            name: stored.name,
            state: stored.state,
            blueprint_sha256: stored.blueprint_sha256,
        })
    }
}

fn approval_of(stored: &StoredBlueprint) -> Result<Option<Binding>, ServerError> {
    stored
        .approval
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| ServerError::Toolsmith {
            id: stored.id,
            message: format!("its stored approval does not parse: {e}"),
        })
}

#[cfg(test)]
mod tests;
