//! `request_capability` for `warden serve`: judges the request against the
//! configured bounds (`warden_policy::judge_request`), issues automatic
//! grants into the store, and sends the rest to an operator through the
//! approvals book — the agent retries the same request once answered.
//!
//! Attack it stops: an agent granting itself what it is denied, or a
//! grant that outlives its purpose. Requests that could do nothing are
//! refused when made (a level change, which grants cannot carry; a tool
//! on the agent's denied list, which no grant overrides); a person's
//! approval grants at most the configured longest time, and only for the
//! session the request came from. These asks are never sent to the
//! agent's client, so only an operator answers them.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_api::{
    ApprovalAnswer, ApprovalRequest, Approver, BoxFuture, CallContext, CapabilityDesk, Envelope,
    ErrorType,
};
use warden_gate::{ApprovalBook, Gate};
use warden_policy::{
    Boundary, Capability, CapabilityGrant, GrantBounds, Reach, RequestVerdict, judge_request,
};
use warden_store::{Store, now_ms};

pub struct Desk {
    pub store: Arc<Store>,
    pub book: Arc<ApprovalBook>,
    pub gate: Gate,
    pub bounds: GrantBounds,
    /// Keys the fingerprint that binds an answer to the exact request.
    pub fingerprint_key: [u8; 32],
}

fn invalid(message: String) -> Envelope {
    Envelope::error(
        ErrorType::ArgumentValidationError,
        "invalid_argument",
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

impl Desk {
    fn issue(&self, context: &CallContext, request: Request, issuer: &str) -> Envelope {
        let now = now_ms();
        let grant = CapabilityGrant {
            id: String::new(),
            agent: context.agent.clone(),
            session: (!context.session.is_empty()).then(|| context.session.clone()),
            capability: request.capability,
            boundary: request.boundary,
            goal: request.justification,
            issuer: issuer.to_owned(),
            valid_from_ms: now,
            valid_to_ms: now.saturating_add(request.ttl_ms),
        };
        match self.store.issue_grant(grant, None) {
            Ok(grant) => Envelope::ok(json!({ "granted": grant })),
            Err(e) => Envelope::error(
                ErrorType::HostError,
                "grant_not_recorded",
                format!("the grant could not be recorded: {e}"),
            ),
        }
    }

    async fn handle(&self, context: &CallContext, args: &Value) -> Envelope {
        let mut request = match parse(args) {
            Ok(r) => r,
            Err(e) => return e,
        };
        if let Some(refusal) = self.pointless(context, &request.capability) {
            return refusal;
        }
        let spec = match &request.capability {
            Capability::Tool(t) if !t.contains(['*', '?']) => match self.gate.spec(t) {
                Some(spec) => Some(spec.clone()),
                None => return invalid(format!("no tool named `{t}` is available")),
            },
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
        let verdict = match &request.capability {
            Capability::Tool(t) if spec.is_none() => RequestVerdict::Person(format!(
                "`tool:{t}` is a pattern over tool names, so a person must approve it"
            )),
            cap => judge_request(&self.bounds, cap, &reach, request.ttl_ms),
        };
        let reason = match verdict {
            RequestVerdict::Auto => return self.issue(context, request, "auto"),
            RequestVerdict::Person(reason) => reason,
        };
        let mut keyed = self.fingerprint_key.to_vec();
        keyed.extend_from_slice(args.to_string().as_bytes());
        let call = format!("request_capability({})", request.capability);
        let reason = if request.ttl_ms > self.bounds.max_ttl_ms {
            format!(
                "{reason}; the ttl will be capped at {} s",
                self.bounds.max_ttl_ms / 1000
            )
        } else {
            reason
        };
        let question = ApprovalRequest {
            id: String::new(),
            agent: context.agent.clone(),
            request_id: context.request_id.clone(),
            tool: "request_capability".to_owned(),
            call: call.clone(),
            reason: format!("{reason} (justification: {})", request.justification),
            suggested_rule: call,
            args_fingerprint: warden_signing::sha256_digest(&keyed),
            arguments: warden_gate::shown_arguments(args),
            always_offered: false,
        };
        match self.book.ask(question).await {
            ApprovalAnswer::AllowOnce | ApprovalAnswer::AlwaysAllow { .. } => {
                request.ttl_ms = request.ttl_ms.min(self.bounds.max_ttl_ms);
                self.issue(context, request, "person")
            }
            ApprovalAnswer::Deny { reason } => Envelope::error(
                ErrorType::PermissionDenied,
                "grant_denied",
                format!("the grant was not given: {reason}"),
            ),
            ApprovalAnswer::Pending { id } => warden_gate::pending_envelope(&reason, &id),
            ApprovalAnswer::Refused { reason, .. } => Envelope::error(
                ErrorType::PermissionDenied,
                "approval_response_refused",
                reason,
            ),
        }
    }

    /// A refusal for a request no grant could serve.
    fn pointless(&self, context: &CallContext, capability: &Capability) -> Option<Envelope> {
        let refuse = |message: String| {
            Some(Envelope::error(
                ErrorType::PermissionDenied,
                "grant_not_possible",
                message,
            ))
        };
        match capability {
            Capability::Level(level) => refuse(format!(
                "`level:{level}` cannot be granted: an agent's level changes in the operator's \
                 configuration or through progressive trust, which a person approves \
                 (`warden trust approve`); request the tool, category or action you need instead"
            )),
            Capability::Tool(tool) => {
                self.gate
                    .denied_entry(&context.agent, tool)
                    .and_then(|entry| {
                        refuse(format!(
                            "`{tool}` is on agent `{}`'s denied list (`{entry}`), which no grant \
                         overrides; ask the operator to change the configuration",
                            context.agent
                        ))
                    })
            }
            _ => None,
        }
    }
}

impl CapabilityDesk for Desk {
    fn request<'a>(&'a self, context: &'a CallContext, args: &'a Value) -> BoxFuture<'a, Envelope> {
        Box::pin(self.handle(context, args))
    }
}
