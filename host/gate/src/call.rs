//! One call through the gate: prepare it once, decide, ask, validate,
//! dispatch, audit, and let trust learn from the outcome.

use std::sync::Arc;

use warden_api::{
    BackendCall, CallHooks, CallRequest, Effects, Envelope, ErrorType, HostCode, LogLevel,
    PathGuard, REQUEST_CAPABILITY,
};
use warden_policy::{Call, Decision, Env, Layer, SpecifierKind, Verdict};

use crate::agents::unknown_agent;
use crate::gate::{Inner, facts};
use crate::table::Entry;
use crate::{durable, resolve};

/// A call read once, for the decision, the question a person sees, and
/// the backend: the specifier rendered from the arguments, the directory
/// its relative paths resolve in, and how it is shown.
pub(crate) struct Prepared {
    pub specifier: Option<String>,
    /// A file tool's path with symlinks resolved through the grants.
    pub resolved: Option<String>,
    /// Where the call's relative paths resolve (a guest path).
    pub base: String,
    /// `tool(specifier)`, with `in CWD` for a shell tool's `cwd`.
    pub shown: String,
    /// What a version-control call does, as its backend declares it.
    pub vcs: Option<warden_policy::VcsOp>,
    /// The remote URL a version-control call reaches and its host, as
    /// the backend resolved them now: judged, then handed to the backend.
    pub remote: Option<String>,
    pub remote_host: Option<String>,
}

impl Prepared {
    pub fn call<'a>(&'a self, entry: &'a Entry) -> Call<'a> {
        let mut tool = facts(entry);
        tool.vcs = self.vcs;
        Call {
            tool,
            specifier: self.specifier.as_deref(),
            resolved_path: self.resolved.as_deref(),
            remote_host: self.remote_host.as_deref(),
            principal: None,
        }
    }

    /// [`Prepared::call`] as made by a signed-in principal (OAuth), for
    /// the rules that name principals.
    pub fn call_by<'a>(
        &'a self,
        entry: &'a Entry,
        principal: Option<&'a warden_api::Principal>,
    ) -> Call<'a> {
        let mut call = self.call(entry);
        call.principal = principal.map(|p| warden_policy::PrincipalFacts {
            subject: &p.subject,
            client_id: p.client_id.as_deref(),
            claims: &p.claims,
        });
        call
    }
}

impl Inner {
    /// The agents' environment with the call's directory as its cwd.
    pub(crate) fn env<'a>(&'a self, prepared: &'a Prepared) -> Env<'a> {
        let mut env = self.agents.env.env();
        env.cwd = &prepared.base;
        env
    }

    /// A shell-command tool's `cwd` argument, normalised against the
    /// workspace; shown in the question a person sees.
    fn call_cwd(&self, entry: &Entry, request: &CallRequest) -> Option<String> {
        if facts(entry).specifier_kind() != SpecifierKind::Shell {
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
    fn base_dir(&self, entry: &Entry, cwd: Option<&str>) -> String {
        if let Some(cwd) = cwd {
            return cwd.to_owned();
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

    pub(crate) fn prepare(&self, entry: &Entry, request: &CallRequest) -> Prepared {
        let specifier = entry.spec.render_specifier(&request.args);
        let cwd = self.call_cwd(entry, request);
        let base = self.base_dir(entry, cwd.as_deref());
        let resolved = match (&specifier, facts(entry).specifier_kind()) {
            (Some(s), SpecifierKind::Path) => warden_policy::path::normalize(s, &base)
                .ok()
                .and_then(|p| resolve::resolve(&p, &entry.grants)),
            _ => None,
        };
        let name = &entry.spec.name;
        let shown = match (&specifier, &cwd) {
            (Some(s), Some(cwd)) => format!("{name}({s}) in {cwd}"),
            (Some(s), None) => format!("{name}({s})"),
            (None, _) => name.to_string(),
        };
        let facts = entry
            .backend
            .vcs_operation(name.as_str(), &request.args, &entry.grants);
        let (vcs, remote, remote_host) = match facts {
            Some(f) => (Some(vcs_op(f.operation)), f.remote, f.remote_host),
            None => (None, None, None),
        };
        Prepared {
            specifier,
            resolved,
            base,
            shown,
            vcs,
            remote,
            remote_host,
        }
    }

    /// What the policy (with the grants in force) decides for the call.
    pub(crate) fn decide(
        &self,
        entry: &Entry,
        request: &CallRequest,
        prepared: &Prepared,
    ) -> Decision {
        if let Some(refused) = self.refresh_trust(&request.context.agent) {
            return refused;
        }
        let call = prepared.call_by(entry, request.context.principal.as_ref());
        let env = self.env(prepared);
        let decision = self
            .agents
            .with(&request.context.agent, |p| match &self.durable.grants {
                // Read only when the policy alone would not allow the call.
                Some(store) => warden_policy::decide_with_grants(
                    p,
                    &call,
                    &env,
                    || store.current(),
                    &request.context.session,
                    self.durable.clock.now_ms(),
                ),
                None => p.decide(&call, &env),
            })
            .unwrap_or_else(|| unknown_agent(&request.context.agent));
        let decision = capped(entry, decision);
        if decision.decision != Verdict::Deny
            && let Some(refused) = crate::target::non_public(
                entry.spec.category.as_str(),
                prepared.specifier.as_deref(),
                &entry.grants,
            )
        {
            return refused;
        }
        decision
    }

    pub(crate) async fn run(&self, request: CallRequest, hooks: CallHooks) -> Envelope {
        if request.tool.trim().eq_ignore_ascii_case(REQUEST_CAPABILITY)
            && let Some(bounds) = &self.capability
        {
            return self.request_capability(bounds, request).await;
        }
        if request
            .tool
            .trim()
            .eq_ignore_ascii_case(warden_api::TOOLSMITH_PROPOSE)
            && let Some(desk) = &self.toolsmith
        {
            let agent = &request.context.agent;
            let facts = crate::propose::facts();
            let refused = match self
                .agents
                .with(agent, |p| p.denied_entry(&facts).map(str::to_owned))
            {
                None => Some(crate::agents::unknown_agent(agent)),
                Some(Some(entry)) => Some(warden_policy::Decision::deny(
                    warden_policy::Layer::Category,
                    format!(
                        "agent `{agent}` may not propose tools: `{}` is on its denied list (`{entry}`)",
                        warden_api::TOOLSMITH_PROPOSE
                    ),
                )),
                Some(None) => None,
            };
            if let Some(decision) = refused {
                return denied(&decision);
            }
            return crate::propose::propose(desk.as_ref(), &request);
        }
        // The entry (and its backend) is held to the end of the call, even
        // if the tool is replaced meanwhile.
        let Some(entry) = self.table().get(&request.tool).cloned() else {
            if let Some(refusal) = self.table().withheld(&request.tool) {
                tracing::info!(tool = %request.tool, "a withheld tool was called");
                return refusal;
            }
            let message = match warden_api::renamed(&request.tool.trim().to_ascii_lowercase()) {
                Some(new) if self.table().get(&new).is_some() => format!(
                    "no tool named `{}` is available: tools are named `{new}` now",
                    request.tool
                ),
                // Nothing by any name: a capability gap.
                _ => {
                    self.unfulfilled(
                        &request,
                        warden_api::Unfulfilled::UnknownTool {
                            name: request.tool.clone(),
                        },
                    );
                    format!(
                        "no tool named `{}` is available; list the tools to see what is",
                        request.tool
                    )
                }
            };
            return Envelope::host(ErrorType::UnknownTool, HostCode::NotFound, message);
        };
        let context = &request.context;
        self.sessions.saw(&context.session, context.task.as_deref());
        let prepared = self.prepare(&entry, &request);
        let decision = self.decide(&entry, &request, &prepared);
        tracing::info!(
            decision = ?decision.decision, layer = ?decision.layer, rule = decision.rule.as_deref(),
            reason = %decision.reason, "decided"
        );
        hooks.log(
            LogLevel::Info,
            "warden",
            format_args!(
                "{}: {:?} by {:?} — {}",
                prepared.shown, decision.decision, decision.layer, decision.reason
            ),
        );
        if let Some(refusal) = self.audit_decision(&request, &prepared, &decision).await {
            return refusal;
        }
        let effects = effects_of(&decision);
        match decision.decision {
            Verdict::Deny => return denied(&decision),
            Verdict::Ask => {
                // Creating a tool is answered on the operators' channel
                // only: never by the agent's own client.
                let approver = match hooks.approver.as_deref() {
                    Some(client)
                        if entry.spec.action_type.as_str() != warden_policy::TOOL_CREATE =>
                    {
                        client
                    }
                    _ => &*self.approver,
                };
                if let Some(refusal) = self
                    .ask(approver, &entry, &request, &decision, &prepared)
                    .await
                {
                    return refusal;
                }
            }
            Verdict::Allow => {}
        }
        let envelope = self
            .checked_dispatch(&entry, &request, &prepared, &hooks, effects)
            .await;
        self.learn(&entry, &request, &envelope, &hooks);
        envelope
    }

    /// A toolsmith candidate's call, in a table only validation sees:
    /// prepared, audited, its arguments checked and dispatched exactly as
    /// any call. What decides it is the operator's approval of the
    /// blueprint (`why`), so no agent's policy is consulted and no trust
    /// learned.
    pub(crate) async fn run_shadow(
        &self,
        entry: &Entry,
        request: &CallRequest,
        hooks: &CallHooks,
        why: &str,
    ) -> Envelope {
        let prepared = self.prepare(entry, request);
        let decision = Decision::allow(Layer::Rule, why);
        if let Some(refusal) = self.audit_decision(request, &prepared, &decision).await {
            return refusal;
        }
        self.checked_dispatch(entry, request, &prepared, hooks, Effects::Approved)
            .await
    }

    /// The decision's audit record, durable before anything runs; the
    /// refusal when it cannot be kept.
    async fn audit_decision(
        &self,
        request: &CallRequest,
        prepared: &Prepared,
        decision: &Decision,
    ) -> Option<Envelope> {
        let journal = self.durable.journal.as_ref();
        let with_args = journal.is_some_and(|j| j.audit_args());
        let event = durable::decision_event(request, &prepared.shown, decision, with_args);
        durable::audit_async(journal, &event).await
    }

    /// Arguments checked against the tool's schema, then the call run:
    /// arguments that do not match never reach the backend.
    async fn checked_dispatch(
        &self,
        entry: &Entry,
        request: &CallRequest,
        prepared: &Prepared,
        hooks: &CallHooks,
        effects: Effects,
    ) -> Envelope {
        if let Err(problems) = entry.validator.check(&request.args) {
            tracing::info!(%problems, "arguments rejected");
            return Envelope::host(
                ErrorType::ArgumentValidationError,
                HostCode::InvalidArgument,
                format!(
                    "arguments of `{}` do not match its schema: {problems}",
                    entry.spec.name
                ),
            );
        }
        self.dispatch(entry, request, prepared, hooks, effects)
            .await
    }

    /// Runs the call on its backend and audits how it ended (queued for
    /// the next commit: the answer does not wait for it).
    async fn dispatch(
        &self,
        entry: &Entry,
        request: &CallRequest,
        prepared: &Prepared,
        hooks: &CallHooks,
        effects: Effects,
    ) -> Envelope {
        let env = self.env(prepared);
        let paths: Option<Arc<dyn PathGuard>> = self.agents.with(&request.context.agent, |p| {
            Arc::new(crate::paths::CallPaths::new(
                p.protection().clone(),
                &env,
                effects,
            )) as Arc<dyn PathGuard>
        });
        let call = BackendCall {
            tool: &entry.spec,
            args: &request.args,
            context: &request.context,
            grants: &entry.grants,
            limits: self.limits,
            events: hooks.events.as_ref(),
            paths: paths.as_ref(),
            cwd: Some(&prepared.base),
            remote: prepared.remote.as_deref(),
        };
        let started = std::time::Instant::now();
        let envelope = entry.backend.invoke(call).await;
        tracing::info!(ok = envelope.is_ok(), "call done");
        let event = durable::outcome_event(
            request,
            entry.spec.name.as_str(),
            &envelope,
            started.elapsed(),
        );
        durable::audit_later(self.durable.journal.as_ref(), &event).await;
        envelope
    }

    /// With a store other hosts share, the agent's trust as stored now
    /// applies to its policy before the decision; a state that cannot be
    /// read refuses the call (fail closed: it may have gone down).
    fn refresh_trust(&self, agent: &str) -> Option<Decision> {
        let trust = self.trust.as_ref()?;
        // An agent the gate does not know is refused by the decision.
        self.agents.with(agent, |_| ())?;
        match trust.refresh(agent) {
            Ok(Some(levels)) => self.agents.set_trust(agent, levels),
            Ok(None) => {}
            Err(e) => {
                return Some(Decision::deny(
                    Layer::Category,
                    format!("the trust of agent `{agent}` could not be read ({e}); try again"),
                ));
            }
        }
        None
    }

    /// Progressive trust learns from a call that ran.
    fn learn(&self, entry: &Entry, request: &CallRequest, envelope: &Envelope, hooks: &CallHooks) {
        let Some(trust) = &self.trust else {
            return;
        };
        let agent = &request.context.agent;
        let difficulty = hooks.difficulty.unwrap_or(crate::trust::DEFAULT_DIFFICULTY);
        match trust.outcome(
            agent,
            entry.spec.category.as_str(),
            envelope.is_ok(),
            difficulty,
        ) {
            Ok(Some(levels)) => self.agents.set_trust(agent, levels),
            Ok(None) => {}
            Err(e) => tracing::error!(%agent, error = %e, "trust was not updated"),
        }
    }
}

/// What a call the gate lets through may change where it runs: a call a
/// person was asked about ran only once approved; an allow that holds only
/// because the call reads runs read-only.
fn effects_of(decision: &Decision) -> Effects {
    match decision.decision {
        Verdict::Ask => Effects::Approved,
        Verdict::Allow if decision.read_only => Effects::ReadOnly,
        _ => Effects::Unattended,
    }
}

/// The envelope an agent sees for a denial: what was denied, by which
/// layer and rule, and what would allow it (the reason says).
pub(crate) fn denied(decision: &Decision) -> Envelope {
    let code = match decision.layer {
        Layer::Input => HostCode::InvalidPath,
        Layer::Category => HostCode::DeniedByCategory,
        Layer::Constraint => HostCode::DeniedByConstraint,
        Layer::Rule => HostCode::DeniedByRule,
        Layer::CircuitBreaker => HostCode::CircuitBreaker,
        Layer::ReadOnly | Layer::Mode => HostCode::DeniedByMode,
        Layer::Grant => HostCode::DeniedByGrant,
    };
    Envelope::host(ErrorType::PermissionDenied, code, decision.reason.clone())
}

/// `decision` under the entry's ceiling: a call no rule or grant decided
/// gets at most the ceiling (a bridged server's `default-decision`).
fn capped(entry: &Entry, decision: Decision) -> Decision {
    let Some(ceiling) = entry.ceiling else {
        return decision;
    };
    let strictness = |v: Verdict| match v {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    };
    if matches!(decision.layer, Layer::Rule | Layer::Grant)
        || strictness(decision.decision) >= strictness(ceiling)
    {
        return decision;
    }
    let name = entry.spec.name.as_str();
    let why = |what: &str| {
        format!(
            "no rule names `{name}`, and its source `{}` {what} the tools no rule names \
             (its default decision)",
            entry.owner
        )
    };
    match ceiling {
        Verdict::Deny => Decision::deny(Layer::Constraint, why("denies")),
        _ => {
            let mut ask = Decision::ask(Layer::Constraint, why("asks a person for"));
            ask.suggested_rule = Some(name.to_owned());
            ask
        }
    }
}

/// The policy's name for a backend's declared version-control operation.
pub fn vcs_op(op: warden_api::VcsOperation) -> warden_policy::VcsOp {
    use warden_api::VcsOperation as A;
    use warden_policy::VcsOp as P;
    match op {
        A::Read => P::Read,
        A::Fetch => P::Fetch,
        A::FetchAllowlisted => P::FetchAllowlisted,
        A::Branch => P::Branch,
        A::BranchDelete => P::BranchDelete,
        A::Commit => P::Commit,
        A::Discard => P::Discard,
        A::Push => P::Push,
        A::ForcePush => P::ForcePush,
    }
}
