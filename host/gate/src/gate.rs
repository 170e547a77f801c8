//! The gate: the handle callers hold, its state, and the [`ToolHost`]
//! face — single calls, batches, resources, sessions — plus trust for
//! operators ([`TrustAdmin`]).

use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::Semaphore;
use tracing::Instrument;
use warden_api::{
    Approver, Attribution, Backend, BoxFuture, CallHooks, CallLimits, CallRequest, Envelope,
    ErrorType, HostCode, Journal, ToolHost, ToolSpec, TrustAdmin, TrustError,
};
use warden_policy::{Decision, GrantBounds, Layer};

use crate::agents::Agents;
use crate::durable::{Clock, GrantStore};
use crate::sessions::Sessions;
use crate::table::{Entry, Registration, Table, TableChange};
use crate::{GateBuilder, GateError, TrustKeeper};

/// The optional durable hooks (see `durable.rs`).
pub(crate) struct Durable {
    pub journal: Option<Arc<dyn Journal>>,
    pub grants: Option<Arc<dyn GrantStore>>,
    /// Where unfulfilled requests are reported (the toolsmith's gaps).
    pub gaps: Option<Arc<dyn warden_api::GapLog>>,
    pub clock: Arc<dyn Clock>,
    pub fingerprint_key: Option<[u8; 32]>,
}

/// The one call path. Implements [`ToolHost`]; cheap to clone.
#[derive(Clone)]
pub struct Gate {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Swapped whole on every change; calls hold the one they started with.
    pub tools: RwLock<Arc<Table>>,
    pub agents: Agents,
    pub approver: Arc<dyn Approver>,
    pub limits: CallLimits,
    pub fingerprint_key: std::collections::hash_map::RandomState,
    pub durable: Durable,
    /// The bounds of `request_capability`, when offered.
    pub capability: Option<GrantBounds>,
    /// Where `toolsmith_propose` hands blueprints, when offered.
    pub toolsmith: Option<Arc<dyn warden_api::BlueprintDesk>>,
    pub trust: Option<Arc<TrustKeeper>>,
    pub sessions: Sessions,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field(
                "tools",
                &self.inner.table().tools.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub fn builder() -> GateBuilder {
        GateBuilder::new()
    }

    /// The spec of a tool, by (normalised) name.
    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        self.inner.table().get(name).map(|e| e.spec.clone())
    }

    /// Applies `changes` as one change: for each `(owner, new)`, every
    /// tool `owner` registered is replaced by the tools of `new`, or
    /// removed when `new` is `None`. A call that started before keeps the
    /// old backend to its end; a call that starts after sees only the new
    /// ones. On a conflict, two registrations of one owner, or a bad schema
    /// nothing changes and the error says why.
    pub fn replace(
        &self,
        changes: Vec<(String, Option<Registration>)>,
    ) -> Result<TableChange, GateError> {
        let mut current = self
            .inner
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let (table, change) = Self::staged(&current, changes)?;
        self.inner.agents.deny_file_paths(&file_tools(&table));
        *current = Arc::new(table);
        Ok(change)
    }

    /// What [`Gate::replace`] would do, without doing it.
    pub fn check_replace(
        &self,
        changes: Vec<(String, Option<Registration>)>,
    ) -> Result<TableChange, GateError> {
        Self::staged(&self.inner.table(), changes).map(|(_, change)| change)
    }

    fn staged(
        table: &Table,
        changes: Vec<(String, Option<Registration>)>,
    ) -> Result<(Table, TableChange), GateError> {
        let mut table = table.clone();
        let mut all = TableChange::default();
        // Two registrations of one owner in one change are two plugins of
        // the same name: refused naming both, as the builder does.
        let mut sources: Vec<(String, String)> = Vec::new();
        for (owner, new) in changes {
            if let Some(new) = &new {
                if let Some((_, first)) = sources.iter().find(|(o, _)| *o == owner) {
                    return Err(GateError::DuplicateOwner {
                        owner,
                        first: first.clone(),
                        second: new.source.clone(),
                    });
                }
                sources.push((owner.clone(), new.source.clone()));
            }
            let (next, change) = table.replace(&owner, new)?;
            table = next;
            all.added.extend(change.added);
            all.removed.extend(change.removed);
            all.replaced.extend(change.replaced);
        }
        Ok((table, all))
    }

    /// Calls `request.tool` of `candidate` (or of a live generated tool)
    /// as if `candidate` were registered, in a copy of the table only
    /// this call sees (the toolsmith's validation): a candidate whose tools clash with the
    /// table is refused as [`Gate::replace`] would refuse it. `why`
    /// stands where a decision's reason would (see `Inner::run_shadow`).
    pub async fn shadow_call(
        &self,
        candidate: Registration,
        request: CallRequest,
        hooks: CallHooks,
        why: &str,
    ) -> Result<Envelope, GateError> {
        let owner = candidate.owner.clone();
        let (shadow, _) = self.inner.table().replace(&owner, Some(candidate))?;
        // The candidate, or a live generated tool (the scorecard); never
        // a static tool, whose calls may change the world.
        let entry = match shadow.get(&request.tool) {
            Some(entry) if entry.owner == owner || entry.generated => entry.clone(),
            _ => {
                return Ok(Envelope::host(
                    ErrorType::UnknownTool,
                    HostCode::NotFound,
                    format!("the candidate has no tool named `{}`", request.tool),
                ));
            }
        };
        Ok(self.inner.run_shadow(&entry, &request, &hooks, why).await)
    }

    /// What each configured agent would list with `candidate` in the
    /// table, against what it lists now: per agent, the tool names it
    /// would gain and lose. Validation's check that a new tool changes
    /// every listing by itself alone.
    pub fn shadow_listings(
        &self,
        candidate: &Registration,
    ) -> Result<Vec<ListingChange>, GateError> {
        let live = self.inner.table();
        let (shadow, _) = live.replace(&candidate.owner, Some(candidate.clone()))?;
        let agents = &self.inner.agents;
        let listed = |table: &crate::table::Table, agent: &str| {
            agents
                .with(agent, |p| {
                    table
                        .tools
                        .values()
                        .filter(|e| p.visible(&facts(e)))
                        .map(|e| e.spec.name.as_str().to_owned())
                        .collect::<std::collections::BTreeSet<String>>()
                })
                .unwrap_or_default()
        };
        Ok(agents
            .ids()
            .into_iter()
            .map(|agent| {
                let (now, then) = (listed(&live, &agent), listed(&shadow, &agent));
                ListingChange {
                    gained: then.difference(&now).cloned().collect(),
                    lost: now.difference(&then).cloned().collect(),
                    agent,
                }
            })
            .collect())
    }

    /// Which owner (a plugin's name, a bridge's key) registered the tool
    /// `name`, if any did.
    pub fn owner_of(&self, name: &str) -> Option<String> {
        self.inner.table().owner_of(name).map(str::to_owned)
    }

    /// The owners (plugin names) whose tools are registered, sorted.
    pub fn owners(&self) -> Vec<String> {
        let mut owners: Vec<String> = self
            .inner
            .table()
            .tools
            .values()
            .map(|e| e.owner.clone())
            .collect();
        owners.sort();
        owners.dedup();
        owners
    }

    /// Every configured agent: its level, mode and (with progressive
    /// trust) its trust state, for an operator's console.
    pub fn agent_summaries(&self) -> Vec<warden_api::AgentSummary> {
        use warden_api::TrustAdmin as _;
        self.inner
            .agents
            .ids()
            .into_iter()
            .filter_map(|name| {
                let (level, mode) = self.inner.agents.with(&name, |p| {
                    let mode = serde_json::to_value(p.mode)
                        .ok()
                        .and_then(|m| m.as_str().map(str::to_owned))
                        .unwrap_or_else(|| format!("{:?}", p.mode));
                    (p.level.as_ref().map(|l| l.name().to_owned()), mode)
                })?;
                Some(warden_api::AgentSummary {
                    trust: self.show(&name).ok(),
                    trust_history: Vec::new(),
                    name,
                    level,
                    mode,
                })
            })
            .collect()
    }

    /// Adds an allow rule to an agent's policy (an "always allow" answer,
    /// or one stored earlier). Fails, changing nothing, on an unknown
    /// agent or a malformed rule.
    pub fn add_allow_rule(&self, agent: &str, rule: &str) -> Result<(), GateError> {
        self.inner.agents.add_allow_rule(agent, rule)
    }

    /// The entry of `agent`'s denied list naming tool `name`, if any (no
    /// grant or approval can allow such a call).
    pub fn denied_entry(&self, agent: &str, name: &str) -> Option<String> {
        self.inner.denied_entry(agent, name)
    }

    /// What the policy decides for a call, without running it.
    pub fn decide(&self, request: &CallRequest) -> Decision {
        match self.inner.table().get(&request.tool) {
            Some(entry) => {
                let prepared = self.inner.prepare(entry, request);
                self.inner.decide(entry, request, &prepared)
            }
            None => Decision::deny(
                Layer::Category,
                format!("no tool named `{}` is available", request.tool),
            ),
        }
    }

    /// Time passed for progressive trust: re-verification and decay, and
    /// counters written to the store. A server calls this periodically.
    pub fn trust_tick(&self) {
        if let Some(trust) = &self.inner.trust {
            for (agent, levels) in trust.tick() {
                self.inner.agents.set_trust(&agent, levels);
            }
        }
    }

    /// Writes trust counters that moved since their last save (at
    /// shutdown).
    pub fn flush_trust(&self) {
        if let Some(trust) = &self.inner.trust
            && let Err(e) = trust.flush()
        {
            tracing::error!(error = %e, "trust counters were not written");
        }
    }

    /// Signs the audit chain's head if only a tag covers it, so the chain
    /// verifies with the public key alone: on a timer, and last thing
    /// before the process exits (after [`Gate::flush_trust`], whose
    /// records it then covers).
    pub fn seal_audit(&self) {
        if let Some(journal) = &self.inner.durable.journal
            && let Err(e) = journal.seal()
        {
            tracing::error!(error = %e, "the audit chain's head was not signed");
        }
    }
}

/// The names of the file-system tools of `table`: deny rules on them deny
/// their paths to every tool.
pub(crate) fn file_tools(table: &Table) -> Vec<String> {
    table
        .tools
        .values()
        .filter(|e| e.spec.category.as_str() == "file-system")
        .map(|e| e.spec.name.to_string())
        .collect()
}

/// How one agent's tool listing would change ([`Gate::shadow_listings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingChange {
    pub agent: String,
    pub gained: Vec<String>,
    pub lost: Vec<String>,
}

pub(crate) fn facts(entry: &Entry) -> warden_policy::ToolFacts<'_> {
    warden_policy::ToolFacts {
        name: entry.spec.name.as_str(),
        category: entry.spec.category.as_str(),
        action_type: entry.spec.action_type.as_str(),
        side_effect: entry.spec.side_effect,
        isolation: match entry.backend.isolation() {
            warden_api::Isolation::Host => warden_policy::Isolation::Host,
            warden_api::Isolation::Wasm => warden_policy::Isolation::Wasm,
            warden_api::Isolation::Container => warden_policy::Isolation::Container,
        },
        vcs: None,
    }
}

impl Inner {
    /// The table current now.
    pub fn table(&self) -> Arc<Table> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A keyed hash of arguments: sha256 under the configured key (stable
    /// across restarts), else SipHash with this gate's random key.
    pub fn fingerprint(&self, args: &serde_json::Value) -> String {
        use std::hash::{BuildHasher, Hasher};
        if let Some(key) = &self.durable.fingerprint_key {
            let mut keyed = key.to_vec();
            keyed.extend_from_slice(args.to_string().as_bytes());
            return warden_signing::sha256_digest(&keyed);
        }
        let mut h = self.fingerprint_key.build_hasher();
        h.write(args.to_string().as_bytes());
        format!("{:016x}", h.finish())
    }

    pub fn denied_entry(&self, agent: &str, name: &str) -> Option<String> {
        let table = self.table();
        let entry = table.get(name)?;
        self.agents
            .with(agent, |p| p.denied_entry(&facts(entry)).map(str::to_owned))
            .flatten()
    }

    fn span(request: &CallRequest) -> tracing::Span {
        let c = &request.context;
        tracing::info_span!(
            "gate", agent = %c.agent, session = %c.session, task = c.task.as_deref(),
            request_id = %c.request_id, tool = %request.tool
        )
    }

    /// Every distinct backend of the current table.
    fn backends(&self) -> Vec<Arc<dyn Backend>> {
        let mut out: Vec<Arc<dyn Backend>> = Vec::new();
        for entry in self.table().tools.values() {
            if !out.iter().any(|b| Arc::ptr_eq(b, &entry.backend)) {
                out.push(entry.backend.clone());
            }
        }
        out
    }
}

impl ToolHost for Gate {
    /// The tools the agent may see, sorted by name; none for an unknown agent.
    fn list_tools(&self, agent: &str) -> Vec<ToolSpec> {
        self.inner
            .agents
            .with(agent, |p| {
                self.inner
                    .table()
                    .tools
                    .values()
                    .filter(|e| p.visible(&facts(e)))
                    .map(|e| e.spec.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn resource<'a>(
        &'a self,
        agent: &'a str,
        tool: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Envelope> {
        let entry = self.inner.table().get(tool).cloned().filter(|e| {
            self.inner
                .agents
                .with(agent, |p| p.visible(&facts(e)))
                .unwrap_or(false)
        });
        let Some(entry) = entry else {
            return Box::pin(std::future::ready(Envelope::host(
                ErrorType::UnknownTool,
                HostCode::NotFound,
                format!("no tool named `{tool}` is available to agent `{agent}`"),
            )));
        };
        if !entry.spec.resources.iter().any(|r| r == id) {
            return Box::pin(std::future::ready(Envelope::host(
                ErrorType::ArgumentValidationError,
                HostCode::NotFound,
                format!(
                    "`{tool}` has no resource `{id}`; it has: {}",
                    entry.spec.resources.join(", ")
                ),
            )));
        }
        let limits = self.inner.limits;
        Box::pin(async move {
            entry
                .backend
                .resource(entry.spec.name.as_str(), id, limits)
                .await
        })
    }

    fn call_with(&self, request: CallRequest, hooks: CallHooks) -> BoxFuture<'_, Envelope> {
        let span = Inner::span(&request);
        Box::pin(self.inner.run(request, hooks).instrument(span))
    }

    /// Each call runs as its own task, so calls use every core and a
    /// panicking call is reported as an error without touching the others.
    fn call_batch(
        &self,
        requests: Vec<CallRequest>,
        max_concurrency: Option<usize>,
    ) -> BoxFuture<'_, Vec<Envelope>> {
        Box::pin(async move {
            let limit = Arc::new(Semaphore::new(
                max_concurrency.unwrap_or(requests.len()).max(1),
            ));
            let handles: Vec<_> = requests
                .into_iter()
                .map(|request| {
                    let inner = self.inner.clone();
                    let limit = limit.clone();
                    let span = Inner::span(&request);
                    tokio::spawn(
                        async move {
                            let Ok(_permit) = limit.acquire().await else {
                                return Envelope::host(
                                    ErrorType::HostError,
                                    HostCode::BatchClosed,
                                    "the batch was cancelled",
                                );
                            };
                            inner.run(request, CallHooks::default()).await
                        }
                        .instrument(span),
                    )
                })
                .collect();
            let mut results = Vec::with_capacity(handles.len());
            for handle in handles {
                results.push(handle.await.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "a call in a batch panicked");
                    Envelope::host(
                        ErrorType::HostError,
                        HostCode::HostPanic,
                        format!("the host failed while running this call: {e}"),
                    )
                }));
            }
            results
        })
    }

    fn offers_capability_requests(&self) -> bool {
        self.inner.capability.is_some() && self.inner.durable.grants.is_some()
    }

    fn offers_toolsmith(&self) -> bool {
        self.inner.toolsmith.is_some()
    }

    /// Ends the tasks that ran in `session` on every backend (per-task
    /// containers go).
    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let tasks = self.inner.sessions.end(session);
            if tasks.is_empty() {
                return;
            }
            let backends = self.inner.backends();
            for task in &tasks {
                for backend in &backends {
                    backend.end_task(task).await;
                }
            }
            tracing::debug!(session, tasks = tasks.len(), "session ended");
        })
    }
}

impl Gate {
    /// A person's trust change: new levels apply to the agent's policy at
    /// once; the state is shown.
    fn applied(
        &self,
        agent: &str,
        (state, levels): (
            warden_policy::trust::TrustState,
            Option<crate::trust::Levels>,
        ),
    ) -> Result<serde_json::Value, TrustError> {
        if let Some(levels) = levels {
            self.inner.agents.set_trust(agent, levels);
        }
        crate::trust::json(&state)
    }

    fn keeper(&self, agent: &str) -> Result<&TrustKeeper, TrustError> {
        if self.inner.agents.with(agent, |_| ()).is_none() {
            return Err(TrustError::UnknownAgent(agent.to_owned()));
        }
        self.inner.trust.as_deref().ok_or(TrustError::Disabled)
    }
}

/// Trust as operators see it in a running host: changes apply to the
/// agent's policy at once.
impl TrustAdmin for Gate {
    fn show(&self, agent: &str) -> Result<serde_json::Value, TrustError> {
        self.keeper(agent)?.show(agent)
    }

    fn feedback(
        &self,
        agent: &str,
        category: Option<&str>,
        score: f64,
    ) -> Result<serde_json::Value, TrustError> {
        let changed = self.keeper(agent)?.rate(agent, category, score)?;
        self.applied(agent, changed)
    }

    fn approve(&self, agent: &str, by: Attribution) -> Result<serde_json::Value, TrustError> {
        let changed = self.keeper(agent)?.promote(agent, by)?;
        self.applied(agent, changed)
    }
}
