//! The gate: identity, lookup, decide, ask, validate, dispatch — for
//! single calls and batches.

use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::Semaphore;
use tracing::Instrument;
use warden_api::{
    Answerer, ApprovalAnswer, ApprovalRequest, Approver, Attribution, AuditEvent, Backend,
    BackendCall, BoxFuture, CallHooks, CallLimits, CallRequest, Envelope, ErrorType, Grants,
    Journal, LogLevel, ToolHost, ToolSpec,
};
use warden_policy::{AgentPolicy, Call, Decision, Layer, Verdict};

use crate::agents::{Agents, PolicyEnv, unknown_agent};
use crate::approval::NoApprover;
use crate::durable::{self, Clock, GrantSource, SystemClock};
use crate::table::{Entry, Registration, Table, TableChange};
use crate::{GateError, resolve};

/// Registers backends and policies, then builds a [`Gate`].
pub struct GateBuilder {
    tools: Table,
    agents: Vec<AgentPolicy>,
    env: PolicyEnv,
    approver: Arc<dyn Approver>,
    limits: CallLimits,
    durable: Durable,
}

/// The optional durable hooks (see `durable.rs`).
struct Durable {
    journal: Option<Arc<dyn Journal>>,
    grants: Option<Arc<dyn GrantSource>>,
    clock: Arc<dyn Clock>,
    fingerprint_key: Option<[u8; 32]>,
}

impl std::fmt::Debug for GateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateBuilder")
            .field("tools", &self.tools.tools.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl GateBuilder {
    /// Defaults: no tools, no agents (every call is denied until agents are
    /// added), nobody to approve asks ([`NoApprover`]), workspace
    /// `/workspace`, and [`CallLimits::DEFAULT`].
    pub fn new() -> GateBuilder {
        GateBuilder {
            tools: Table::default(),
            agents: Vec::new(),
            env: PolicyEnv {
                workspace: "/workspace".into(),
                project: "/workspace".into(),
                home: "/home/agent".into(),
            },
            approver: Arc::new(NoApprover),
            limits: CallLimits::DEFAULT,
            durable: Durable {
                journal: None,
                grants: None,
                clock: Arc::new(SystemClock),
                fingerprint_key: None,
            },
        }
    }

    /// Where decisions, outcomes and "always allow" rules are written.
    /// Default: nowhere.
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> GateBuilder {
        self.durable.journal = Some(journal);
        self
    }

    /// The capability grants decisions consult. Default: none.
    pub fn grants(mut self, grants: Arc<dyn GrantSource>) -> GateBuilder {
        self.durable.grants = Some(grants);
        self
    }

    /// The clock grants are judged by. Default: the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> GateBuilder {
        self.durable.clock = clock;
        self
    }

    /// A secret that keys argument fingerprints, so they stay the same
    /// across restarts (durable approvals need that). Default: a random
    /// key per process.
    pub fn fingerprint_key(mut self, key: [u8; 32]) -> GateBuilder {
        self.durable.fingerprint_key = Some(key);
        self
    }

    /// Registers every tool of `backend`, whose calls hold `grants`, under
    /// the owner `source`. Nothing is registered if any tool clashes with
    /// one already present or has an unusable schema.
    pub fn backend(
        self,
        source: &str,
        backend: Arc<dyn Backend>,
        grants: Grants,
    ) -> Result<GateBuilder, GateError> {
        self.register(Registration {
            owner: source.to_owned(),
            source: source.to_owned(),
            backend,
            grants,
        })
    }

    /// Registers a backend under its owner key (a plugin's name), which a
    /// later [`Gate::replace`] names. A second registration of the same
    /// owner replaces the first.
    pub fn register(mut self, registration: Registration) -> Result<GateBuilder, GateError> {
        let owner = registration.owner.clone();
        self.tools = self.tools.replace(&owner, Some(registration))?.0;
        Ok(self)
    }

    /// Adds an agent's policy (replacing one with the same id).
    pub fn agent(mut self, policy: AgentPolicy) -> GateBuilder {
        self.agents.retain(|a| a.id != policy.id);
        self.agents.push(policy);
        self
    }

    /// Where agents' paths resolve.
    pub fn env(mut self, env: PolicyEnv) -> GateBuilder {
        self.env = env;
        self
    }

    pub fn approver(mut self, approver: Arc<dyn Approver>) -> GateBuilder {
        self.approver = approver;
        self
    }

    pub fn limits(mut self, limits: CallLimits) -> GateBuilder {
        self.limits = limits;
        self
    }

    pub fn build(self) -> Gate {
        let agents = Agents::new(self.agents, self.env);
        agents.deny_file_paths(&file_tools(&self.tools));
        Gate {
            inner: Arc::new(Inner {
                tools: RwLock::new(Arc::new(self.tools)),
                agents,
                approver: self.approver,
                limits: self.limits,
                fingerprint_key: std::collections::hash_map::RandomState::new(),
                durable: self.durable,
            }),
        }
    }
}

impl Default for GateBuilder {
    fn default() -> Self {
        GateBuilder::new()
    }
}

/// The one call path. Implements [`ToolHost`]; cheap to clone.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    /// Swapped whole on every change; calls hold the one they started with.
    tools: RwLock<Arc<Table>>,
    agents: Agents,
    approver: Arc<dyn Approver>,
    limits: CallLimits,
    fingerprint_key: std::collections::hash_map::RandomState,
    durable: Durable,
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
    /// ones. On a conflict or a bad schema nothing changes and the error
    /// says why.
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
        for (owner, new) in changes {
            let (next, change) = table.replace(&owner, new)?;
            table = next;
            all.added.extend(change.added);
            all.removed.extend(change.removed);
            all.replaced.extend(change.replaced);
        }
        Ok((table, all))
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

    /// Adds an allow rule to an agent's policy (an "always allow" answer).
    /// Fails, changing nothing, on an unknown agent or a malformed rule.
    pub fn add_allow_rule(&self, agent: &str, rule: &str) -> Result<(), String> {
        self.inner.agents.add_allow_rule(agent, rule)
    }

    /// Sets the levels progressive trust gives an agent (`None`: its
    /// configured level applies).
    pub fn set_trust(
        &self,
        agent: &str,
        trust: Option<warden_policy::TrustLevels>,
    ) -> Result<(), String> {
        self.inner.agents.set_trust(agent, trust)
    }

    /// The entry of `agent`'s denied list naming tool `name`, if any (no
    /// grant or approval can allow such a call).
    pub fn denied_entry(&self, agent: &str, name: &str) -> Option<String> {
        let table = self.inner.table();
        let entry = table.get(name)?;
        self.inner
            .agents
            .with(agent, |p| p.denied_entry(&facts(entry)).map(str::to_owned))
            .flatten()
    }

    /// What the policy decides for a call, without running it.
    pub fn decide(&self, request: &CallRequest) -> Decision {
        match self.inner.table().get(&request.tool) {
            Some(entry) => self.inner.decide(entry, request).0,
            None => Decision::deny(
                Layer::Category,
                format!("no tool named `{}` is available", request.tool),
            ),
        }
    }
}

/// The names of the file-system tools of `table`: deny rules on them deny
/// their paths to every tool.
fn file_tools(table: &Table) -> Vec<String> {
    table
        .tools
        .values()
        .filter(|e| e.spec.category.as_str() == "file-system")
        .map(|e| e.spec.name.to_string())
        .collect()
}

fn facts(entry: &Entry) -> warden_policy::ToolFacts<'_> {
    warden_policy::ToolFacts {
        name: entry.spec.name.as_str(),
        category: entry.spec.category.as_str(),
        action_type: entry.spec.action_type.as_str(),
        side_effect: entry.spec.side_effect,
        isolated: entry.backend.isolated(),
    }
}

/// The envelope an agent sees for a denial: what was denied, by which
/// layer and rule, and what would allow it (the reason says).
fn denied(decision: &Decision) -> Envelope {
    let code = match decision.layer {
        Layer::Input => "invalid_path",
        Layer::Category => "denied_by_category",
        Layer::Constraint => "denied_by_constraint",
        Layer::Rule => "denied_by_rule",
        Layer::CircuitBreaker => "circuit_breaker",
        Layer::ReadOnly | Layer::Mode => "denied_by_mode",
        Layer::Grant => "denied_by_grant",
    };
    Envelope::error(ErrorType::PermissionDenied, code, decision.reason.clone())
}

impl Inner {
    /// The table current now.
    fn table(&self) -> Arc<Table> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A keyed hash of arguments: SipHash with this gate's random key.
    fn fingerprint(&self, args: &serde_json::Value) -> String {
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

    fn span(request: &CallRequest) -> tracing::Span {
        let c = &request.context;
        tracing::info_span!(
            "gate", agent = %c.agent, session = %c.session, task = c.task.as_deref(),
            request_id = %c.request_id, tool = %request.tool
        )
    }

    /// A shell-command tool's `cwd` argument, normalised against the
    /// workspace; shown in the question a person sees.
    fn call_cwd(&self, entry: &Entry, request: &CallRequest) -> Option<String> {
        if facts(entry).specifier_kind() != warden_policy::SpecifierKind::Shell {
            return None;
        }
        let cwd = request.args.get("cwd")?.as_str()?;
        let env = self.agents.env.env();
        // An unreadable cwd leaves the workspace, which the tool refuses.
        warden_policy::path::normalize(cwd, env.workspace).ok()
    }

    /// The one directory a call's relative paths resolve against, for the
    /// decision and the tool alike: a shell tool's `cwd` argument; else the
    /// workspace when one of the tool's directory grants covers it; else
    /// the tool's first granted directory (the only place its relative
    /// paths can land); else the workspace.
    fn base_dir(&self, entry: &Entry, request: &CallRequest) -> String {
        if let Some(cwd) = self.call_cwd(entry, request) {
            return cwd;
        }
        let workspace = &self.agents.env.workspace;
        let fs = &entry.grants.fs;
        if fs.is_empty()
            || fs
                .iter()
                .any(|g| warden_policy::path::is_within(workspace, &g.guest_path))
        {
            return workspace.clone();
        }
        fs.first()
            .map_or_else(|| workspace.clone(), |g| g.guest_path.clone())
    }

    /// The decision and the `tool(specifier)` the policy saw.
    fn decide(&self, entry: &Entry, request: &CallRequest) -> (Decision, String) {
        let specifier = entry.spec.render_specifier(&request.args);
        let cwd = self.call_cwd(entry, request);
        let base = self.base_dir(entry, request);
        let mut env = self.agents.env.env();
        env.cwd = &base;
        let resolved = match (&specifier, facts(entry).specifier_kind()) {
            (Some(s), warden_policy::SpecifierKind::Path) => {
                warden_policy::path::normalize(s, env.cwd)
                    .ok()
                    .and_then(|p| resolve::resolve(&p, &entry.grants))
            }
            _ => None,
        };
        let call = Call {
            tool: facts(entry),
            specifier: specifier.as_deref(),
            resolved_path: resolved.as_deref(),
        };
        let shown = match (&specifier, &cwd) {
            (Some(s), Some(cwd)) => format!("{}({s}) in {cwd}", entry.spec.name),
            (Some(s), None) => format!("{}({s})", entry.spec.name),
            (None, _) => entry.spec.name.to_string(),
        };
        let grants = self.durable.grants.as_ref().map(|g| g.current());
        let decision = self
            .agents
            .with(&request.context.agent, |p| match &grants {
                Some(set) => warden_policy::decide_with_grants(
                    p,
                    &call,
                    &env,
                    set,
                    &request.context.session,
                    self.durable.clock.now_ms(),
                ),
                None => p.decide(&call, &env),
            })
            .unwrap_or_else(|| unknown_agent(&request.context.agent));
        if decision.decision != Verdict::Deny
            && let Some(refused) = crate::target::non_public(
                entry.spec.category.as_str(),
                specifier.as_deref(),
                &entry.grants,
            )
        {
            return (refused, shown);
        }
        (decision, shown)
    }

    async fn run(&self, request: CallRequest, hooks: CallHooks) -> Envelope {
        // The entry (and its backend) is held to the end of the call, even
        // if the tool is replaced meanwhile.
        let Some(entry) = self.table().get(&request.tool).cloned() else {
            return Envelope::error(
                ErrorType::UnknownTool,
                "not_found",
                format!(
                    "no tool named `{}` is available; list the tools to see what is",
                    request.tool
                ),
            );
        };
        let (decision, shown) = self.decide(&entry, &request);
        tracing::info!(
            decision = ?decision.decision, layer = ?decision.layer, rule = decision.rule.as_deref(),
            reason = %decision.reason, "decided"
        );
        hooks.log(
            LogLevel::Info,
            "warden",
            format_args!(
                "{shown}: {:?} by {:?} — {}",
                decision.decision, decision.layer, decision.reason
            ),
        );
        let journal = self.durable.journal.as_ref();
        let with_args = journal.is_some_and(|j| j.audit_args());
        let event = durable::decision_event(&request, &shown, &decision, with_args);
        if let Some(refusal) = durable::audit(journal, &event) {
            return refusal;
        }
        let approved = decision.decision == Verdict::Ask;
        match decision.decision {
            Verdict::Deny => return denied(&decision),
            Verdict::Ask => {
                let approver = hooks.approver.as_deref().unwrap_or(&*self.approver);
                if let Some(refusal) = self
                    .ask(approver, &entry, &request, &decision, &shown)
                    .await
                {
                    return refusal;
                }
            }
            Verdict::Allow => {}
        }
        if let Err(problems) = entry.validator.check(&request.args) {
            tracing::info!(%problems, "arguments rejected");
            return Envelope::error(
                ErrorType::ArgumentValidationError,
                "invalid_argument",
                format!(
                    "arguments of `{}` do not match its schema: {problems}",
                    entry.spec.name
                ),
            );
        }
        let base = self.base_dir(&entry, &request);
        let paths: Option<Arc<dyn warden_api::PathGuard>> =
            self.agents.with(&request.context.agent, |p| {
                let mut env = self.agents.env.env();
                env.cwd = &base;
                Arc::new(crate::paths::CallPaths::new(
                    p.protection().clone(),
                    &env,
                    approved,
                )) as Arc<dyn warden_api::PathGuard>
            });
        let call = BackendCall {
            tool: &entry.spec,
            args: &request.args,
            context: &request.context,
            grants: &entry.grants,
            limits: self.limits,
            events: hooks.events.as_ref(),
            paths: paths.as_ref(),
            cwd: Some(&base),
        };
        let started = std::time::Instant::now();
        let envelope = entry.backend.invoke(call).await;
        tracing::info!(ok = envelope.is_ok(), "call done");
        let event = durable::outcome_event(
            &request,
            entry.spec.name.as_str(),
            &envelope,
            started.elapsed(),
        );
        if let Some(journal) = journal
            && let Err(e) = journal.audit(&event)
        {
            // The call ran; its result stands, but the operator must know
            // the trail has a gap.
            tracing::error!(error = %e, "audit append of a call outcome failed");
        }
        envelope
    }

    /// Checks and writes down an "always allow" rule before it applies.
    fn persist_rule(
        &self,
        agent: &str,
        rule: &str,
        by: Option<&Attribution>,
    ) -> Result<(), String> {
        warden_policy::RuleSet::parse(&[rule.to_owned()], &[], &[]).map_err(|e| e.to_string())?;
        match &self.durable.journal {
            Some(journal) => journal
                .rule_added(agent, rule, None, by)
                .map_err(|e| format!("it could not be recorded: {e}")),
            None => Ok(()),
        }
    }

    /// Asks a person; `None` when they allowed the call.
    async fn ask(
        &self,
        approver: &dyn Approver,
        entry: &Entry,
        request: &CallRequest,
        decision: &Decision,
        shown: &str,
    ) -> Option<Envelope> {
        let specifier = entry.spec.render_specifier(&request.args);
        let call = Call {
            tool: facts(entry),
            specifier: specifier.as_deref(),
            resolved_path: None,
        };
        let base = self.base_dir(entry, request);
        let mut env = self.agents.env.env();
        env.cwd = &base;
        let agent = &request.context.agent;
        let suggested_rule = self
            .agents
            .with(agent, |p| p.exact_rule(&call, &env))
            .unwrap_or_else(|| entry.spec.name.to_string());
        let never_always = warden_policy::never_always(&call.tool, decision);
        let question = ApprovalRequest {
            id: String::new(),
            agent: agent.clone(),
            request_id: request.context.request_id.clone(),
            tool: entry.spec.name.to_string(),
            call: shown.to_owned(),
            reason: decision.reason.clone(),
            suggested_rule,
            args_fingerprint: self.fingerprint(&request.args),
            arguments: crate::shown_arguments(&request.args),
            always_offered: never_always.is_none(),
        };
        match approver.ask(question).await {
            ApprovalAnswer::AllowOnce => {
                tracing::info!("approved once");
                None
            }
            ApprovalAnswer::AlwaysAllow { rule, by } => {
                let operator = match by {
                    Answerer::Operator(who) => Some(who),
                    Answerer::Client => {
                        let refusal = never_always.or_else(|| {
                            self.agents
                                .with(agent, |p| p.client_rule_refusal(&call, &env, &rule))
                                .flatten()
                        });
                        if let Some(why) = refusal {
                            tracing::warn!(%rule, %why, "a client's always-allow rule was refused");
                            return Some(self.refused_response(request, shown, None, &why));
                        }
                        None
                    }
                };
                let added = self
                    .persist_rule(agent, &rule, operator.as_ref())
                    .and_then(|()| self.agents.add_allow_rule(agent, &rule));
                match added {
                    Ok(()) => {
                        tracing::info!(%rule, by = ?operator.as_ref().map(|o| &o.actor), "approved; rule added");
                        None
                    }
                    Err(e) => Some(Envelope::error(
                        ErrorType::PermissionDenied,
                        "approval_invalid_rule",
                        format!(
                            "the approval's rule `{rule}` is not valid ({e}); the call was not run"
                        ),
                    )),
                }
            }
            ApprovalAnswer::Deny { reason } => Some(Envelope::error(
                ErrorType::PermissionDenied,
                "approval_denied",
                format!("{} — {reason}", decision.reason),
            )),
            ApprovalAnswer::Pending { id } => Some(pending_envelope(&decision.reason, &id)),
            ApprovalAnswer::Refused { id, reason } => {
                Some(self.refused_response(request, shown, id.as_deref(), &reason))
            }
        }
    }

    /// An answer that came with the call and was not accepted: audited,
    /// and reported to the agent; the ask (if any) keeps waiting.
    fn refused_response(
        &self,
        request: &CallRequest,
        shown: &str,
        id: Option<&str>,
        reason: &str,
    ) -> Envelope {
        let c = &request.context;
        let event = AuditEvent::ResponseRefused {
            agent: c.agent.clone(),
            session: c.session.clone(),
            request_id: c.request_id.clone(),
            call: shown.to_owned(),
            approval: id.map(str::to_owned),
            reason: reason.to_owned(),
        };
        if let Some(refusal) = durable::audit(self.durable.journal.as_ref(), &event) {
            return refusal;
        }
        let waiting = match id {
            Some(id) => format!("; approval {id} still waits for a person"),
            None => String::new(),
        };
        Envelope::error(
            ErrorType::PermissionDenied,
            "approval_response_refused",
            format!(
                "the answer sent with this call was refused: {reason}; the call was not run{waiting}"
            ),
        )
    }
}

/// The envelope of a call that waits for a person's approval `id`.
pub fn pending_envelope(reason: &str, id: &str) -> Envelope {
    Envelope::error(
        ErrorType::PermissionDenied,
        "approval_pending",
        format!(
            "{reason} — waiting for a person's approval {id}: ask them to answer it \
             (`warden approvals approve {id}`, or `warden approvals deny {id}`), then retry the same call"
        ),
    )
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
            return Box::pin(std::future::ready(Envelope::error(
                ErrorType::UnknownTool,
                "not_found",
                format!("no tool named `{tool}` is available to agent `{agent}`"),
            )));
        };
        if !entry.spec.resources.iter().any(|r| r == id) {
            return Box::pin(std::future::ready(Envelope::error(
                ErrorType::ArgumentValidationError,
                "not_found",
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
                                return Envelope::error(
                                    ErrorType::HostError,
                                    "batch_closed",
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
                    Envelope::error(
                        ErrorType::HostError,
                        "host_panic",
                        format!("the host failed while running this call: {e}"),
                    )
                }));
            }
            results
        })
    }
}
