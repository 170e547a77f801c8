//! `request_capability`, through the gate: the request is judged against
//! the configured bounds (`warden_policy::judge_request`), automatic
//! grants are issued into the grant store, and the rest wait for an
//! operator in the gate's own approver (the approvals book) — the agent
//! retries the same request once answered. Decided, asked and audited on
//! the call path like any call, under the call's span.
//!
//! Attack it stops: an agent granting itself what it is denied, or a
//! grant that outlives its purpose. Requests that could do nothing are
//! refused when made (a level change, which grants cannot carry; a tool
//! on the agent's denied list, which no grant overrides); a person's
//! approval grants at most the configured longest time, and only for the
//! session the request came from. These asks never go to the agent's
//! client (the per-call approver is ignored), so only an operator answers.

use serde_json::{Value, json};
use warden_api::{ApprovalAnswer, CallRequest, Envelope, ErrorType, HostCode, REQUEST_CAPABILITY};
use warden_policy::{
    Boundary, Capability, CapabilityGrant, Decision, GrantBounds, Layer, Reach, RequestVerdict,
    judge_request,
};

use crate::ask::{Asked, pending_envelope};
use crate::durable;
use crate::gate::Inner;

fn invalid(message: String) -> Envelope {
    Envelope::host(
        ErrorType::ArgumentValidationError,
        HostCode::InvalidArgument,
        message,
    )
}

struct Request {
    capability: Capability,
    justification: String,
    ttl_ms: u64,
    boundary: Boundary,
}

fn parse(args: &Value) -> Result<Request, Envelope> {
    let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::trim);
    let capability = text("capability")
        .ok_or_else(|| invalid("`capability` is required".into()))?
        .parse::<Capability>()
        .map_err(|e| invalid(e.to_string()))?;
    let justification = text("justification")
        .filter(|j| !j.is_empty())
        .ok_or_else(|| invalid("`justification` is required: say what the grant is for".into()))?
        .to_owned();
    let ttl = args
        .get("ttl")
        .and_then(Value::as_u64)
        .filter(|t| *t > 0)
        .ok_or_else(|| invalid("`ttl` must be a positive number of seconds".into()))?;
    let boundary = match args.get("boundary") {
        None | Some(Value::Null) => Boundary::default(),
        Some(b) => {
            serde_json::from_value(b.clone()).map_err(|e| invalid(format!("`boundary`: {e}")))?
        }
    };
    Ok(Request {
        capability,
        justification,
        ttl_ms: ttl.saturating_mul(1000),
        boundary,
    })
}

impl Inner {
    pub(crate) async fn request_capability(
        &self,
        bounds: &GrantBounds,
        request: CallRequest,
    ) -> Envelope {
        let started = std::time::Instant::now();
        let (shown, envelope) = match parse(&request.args) {
            Ok(parsed) => {
                let shown = format!("{REQUEST_CAPABILITY}({})", parsed.capability);
                let envelope = self.judge(bounds, &request, &shown, parsed).await;
                (shown, envelope)
            }
            Err(envelope) => (REQUEST_CAPABILITY.to_owned(), envelope),
        };
        let event =
            durable::outcome_event(&request, REQUEST_CAPABILITY, &envelope, started.elapsed());
        if durable::audit_async(self.durable.journal.as_ref(), &event)
            .await
            .is_some()
        {
            tracing::error!(call = %shown, "audit append of a capability request's outcome failed");
        }
        envelope
    }

    /// Decides a parsed request (audited before anything is granted or
    /// asked), then grants, asks or refuses.
    async fn judge(
        &self,
        bounds: &GrantBounds,
        request: &CallRequest,
        shown: &str,
        mut parsed: Request,
    ) -> Envelope {
        let decision = self.judgement(bounds, request, &parsed);
        let journal = self.durable.journal.as_ref();
        let with_args = journal.is_some_and(|j| j.audit_args());
        let event = durable::decision_event(request, shown, &decision, with_args);
        if let Some(refusal) = durable::audit_async(journal, &event).await {
            return refusal;
        }
        tracing::info!(decision = ?decision.decision, reason = %decision.reason, "capability request decided");
        match decision.decision {
            warden_policy::Verdict::Deny => {
                let code = match decision.layer {
                    Layer::Input => HostCode::InvalidArgument,
                    _ => HostCode::GrantNotPossible,
                };
                let error_type = match decision.layer {
                    Layer::Input => ErrorType::ArgumentValidationError,
                    _ => ErrorType::PermissionDenied,
                };
                return Envelope::host(error_type, code, decision.reason);
            }
            warden_policy::Verdict::Allow => return self.issue(request, parsed, "auto"),
            warden_policy::Verdict::Ask => {}
        }
        let reason = if parsed.ttl_ms > bounds.max_ttl_ms {
            format!(
                "{}; the ttl will be capped at {} s",
                decision.reason,
                bounds.max_ttl_ms / 1000
            )
        } else {
            decision.reason.clone()
        };
        let question = self.question(
            request,
            Asked {
                tool: REQUEST_CAPABILITY,
                shown,
                reason: format!("{reason} (justification: {})", parsed.justification),
                suggested_rule: shown.to_owned(),
                always_offered: false,
            },
        );
        // The gate's own approver: an operator's book, never the client.
        match self.approver.ask(question).await {
            ApprovalAnswer::AllowOnce | ApprovalAnswer::AlwaysAllow { .. } => {
                parsed.ttl_ms = parsed.ttl_ms.min(bounds.max_ttl_ms);
                self.issue(request, parsed, "person")
            }
            ApprovalAnswer::Deny { reason } => Envelope::host(
                ErrorType::PermissionDenied,
                HostCode::GrantDenied,
                format!("the grant was not given: {reason}"),
            ),
            ApprovalAnswer::Pending { id } => pending_envelope(&reason, &id),
            ApprovalAnswer::Refused { id, reason } => {
                self.refused_response(request, shown, id.as_deref(), &reason)
            }
        }
    }

    /// Allow (automatic), ask (a person), or deny (a request no grant
    /// could serve), with the reason.
    fn judgement(&self, bounds: &GrantBounds, request: &CallRequest, parsed: &Request) -> Decision {
        let agent = &request.context.agent;
        if self.agents.with(agent, |_| ()).is_none() {
            return crate::agents::unknown_agent(agent);
        }
        let spec = match &parsed.capability {
            Capability::Level(level) => {
                return Decision::deny(
                    Layer::Grant,
                    format!(
                        "`level:{level}` cannot be granted: an agent's level changes in the \
                         operator's configuration or through progressive trust, which a person \
                         approves (`warden trust approve`); request the tool, category or action \
                         you need instead"
                    ),
                );
            }
            Capability::Tool(tool) => {
                if let Some(entry) = self.denied_entry(agent, tool) {
                    return Decision::deny(
                        Layer::Grant,
                        format!(
                            "`{tool}` is on agent `{agent}`'s denied list (`{entry}`), which no \
                             grant overrides; ask the operator to change the configuration"
                        ),
                    );
                }
                if tool.contains(['*', '?']) {
                    None
                } else {
                    match self.table().get(tool) {
                        Some(entry) => Some(entry.spec.clone()),
                        None => {
                            self.unfulfilled(
                                request,
                                warden_api::Unfulfilled::ToolCapability { name: tool.clone() },
                            );
                            return Decision::deny(
                                Layer::Input,
                                format!("no tool named `{tool}` is available"),
                            );
                        }
                    }
                }
            }
            _ => None,
        };
        let reach: Vec<Reach<'_>> = spec
            .iter()
            .map(|s| Reach {
                tool: Some(s.name.as_str()),
                category: Some(s.category.as_str()),
                action_type: Some(s.action_type.as_str()),
            })
            .collect();
        let verdict = match &parsed.capability {
            Capability::Tool(t) if spec.is_none() => RequestVerdict::Person(format!(
                "`tool:{t}` is a pattern over tool names, so a person must approve it"
            )),
            cap => judge_request(bounds, cap, &reach, parsed.ttl_ms),
        };
        match verdict {
            RequestVerdict::Auto => Decision::allow(
                Layer::Grant,
                format!(
                    "`{}` is within the bounds of automatic grants",
                    parsed.capability
                ),
            ),
            RequestVerdict::Person(reason) => Decision::ask(Layer::Grant, reason),
        }
    }

    fn issue(&self, request: &CallRequest, parsed: Request, issuer: &str) -> Envelope {
        let Some(store) = &self.durable.grants else {
            return Envelope::host(
                ErrorType::HostError,
                HostCode::GrantUnavailable,
                "this host keeps no capability grants",
            );
        };
        let context = &request.context;
        let now = self.durable.clock.now_ms();
        let grant = CapabilityGrant {
            id: String::new(),
            agent: context.agent.clone(),
            session: (!context.session.is_empty()).then(|| context.session.clone()),
            capability: parsed.capability,
            boundary: parsed.boundary,
            goal: parsed.justification,
            issuer: issuer.to_owned(),
            valid_from_ms: now,
            valid_to_ms: now.saturating_add(parsed.ttl_ms),
        };
        match store.issue(grant) {
            Ok(grant) => Envelope::ok(json!({ "granted": grant })),
            Err(e) => Envelope::host(
                ErrorType::HostError,
                HostCode::GrantNotRecorded,
                format!("the grant could not be recorded: {e}"),
            ),
        }
    }
}
