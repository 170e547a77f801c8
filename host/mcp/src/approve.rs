//! Asks answered by the person behind the MCP client.
//!
//! Three ways, one book: a client on an older protocol revision that
//! declared elicitation gets an `elicitation/create` request and the call
//! waits for the answer (up to the approval expiry); a 2026-07-28 client
//! that declared elicitation gets an input-required result whose request
//! state is the approval id, and its retry carries the answer; any other
//! client gets a pending-approval error naming the id, answered through
//! `warden approvals` or the admin API, and retries.
//!
//! Attack it stops: an agent approving its own calls through another
//! agent's ask, or spending an answer on a different call — answers go
//! through the approvals book, which binds them to the asking agent and
//! to the exact call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use rmcp::service::Peer;
use serde_json::{Value, json};
use warden_api::{ApprovalAnswer, ApprovalRequest, Approver, BoxFuture};
use warden_gate::{ApprovalBook, BookError};

/// The key of the approval question among an input-required result's
/// requests.
pub(crate) const INPUT_KEY: &str = "approval";

/// The form a person fills in: a decision, and the rule to add when they
/// choose "always allow" (prefilled with the exact call; they may broaden
/// it).
pub(crate) fn elicit_params(request: &ApprovalRequest) -> Result<ElicitRequestParams, String> {
    let message = format!(
        "Agent `{}` wants to run {}\nWhy this asks: {}\nAllow it?",
        request.agent, request.call, request.reason
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "oneOf": [
                        {"const": "allow_once", "title": "Allow once"},
                        {"const": "always_allow", "title": "Always allow (adds the rule below)"},
                        {"const": "deny", "title": "Deny"}
                    ]
                },
                "rule": {
                    "type": "string",
                    "title": "Allow rule (for always allow)",
                    "default": request.suggested_rule
                },
                "reason": {
                    "type": "string",
                    "title": "Reason (for deny)"
                }
            },
            "required": ["decision"]
        }
    }))
    .map_err(|e| format!("cannot build the approval form: {e}"))
}

/// A person's answer from an elicitation result. Declining or cancelling
/// the form denies; "always allow" without a rule uses the suggested one.
pub(crate) fn answer_from(result: &ElicitResult, request: &ApprovalRequest) -> ApprovalAnswer {
    let field = |name: &str| {
        result
            .content
            .as_ref()
            .and_then(|c| c.get(name))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    match result.action {
        ElicitationAction::Accept => match field("decision") {
            Some("allow_once") => ApprovalAnswer::AllowOnce,
            Some("always_allow") => ApprovalAnswer::AlwaysAllow {
                rule: field("rule").unwrap_or(&request.suggested_rule).to_owned(),
            },
            Some("deny") => ApprovalAnswer::Deny {
                reason: field("reason")
                    .map(|r| format!("denied by a person: {r}"))
                    .unwrap_or_else(|| "denied by a person".to_owned()),
            },
            other => ApprovalAnswer::Deny {
                reason: format!(
                    "the approval form came back without a valid decision ({})",
                    other.unwrap_or("none")
                ),
            },
        },
        ElicitationAction::Decline => ApprovalAnswer::Deny {
            reason: "the person declined".to_owned(),
        },
        ElicitationAction::Cancel => ApprovalAnswer::Deny {
            reason: "the person cancelled the approval".to_owned(),
        },
        _ => ApprovalAnswer::Deny {
            reason: "the approval form came back with an unknown action".to_owned(),
        },
    }
}

/// Older protocol revisions: asks the client with `elicitation/create` and
/// waits, at most the approval expiry.
pub(crate) struct ElicitingApprover {
    pub peer: Peer<RoleServer>,
    pub expiry: Duration,
}

impl Approver for ElicitingApprover {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            let params = match elicit_params(&request) {
                Ok(p) => p,
                Err(reason) => return ApprovalAnswer::Deny { reason },
            };
            match self
                .peer
                .create_elicitation_with_timeout(params, Some(self.expiry))
                .await
            {
                Ok(result) => answer_from(&result, &request),
                Err(e) => ApprovalAnswer::Deny {
                    reason: format!("no answer from the client's approval prompt ({e})"),
                },
            }
        })
    }
}

/// Asks the book and remembers the ask it left pending, so the handler
/// can turn it into an input-required result.
pub(crate) struct Recording {
    pub book: Arc<ApprovalBook>,
    pub pending: Mutex<Option<ApprovalRequest>>,
}

impl Approver for Recording {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            let answer = self.book.ask(request.clone()).await;
            if let ApprovalAnswer::Pending { id } = &answer {
                let mut request = request;
                request.id = id.clone();
                *self
                    .pending
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(request);
            }
            answer
        })
    }
}

/// The input-required result for a pending ask (2026-07-28).
pub(crate) fn input_required(request: &ApprovalRequest) -> Result<InputRequiredResult, String> {
    let params = elicit_params(request)?;
    let elicit = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": params,
    }))
    .map_err(|e| format!("cannot build the approval request: {e}"))?;
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_owned(), InputRequest::Elicitation(elicit));
    Ok(InputRequiredResult::new(
        Some(requests),
        Some(request.id.clone()),
    ))
}

/// Records the answer a 2026-07-28 client sent back with its retry.
pub(crate) fn record_response(
    book: &ApprovalBook,
    agent: &str,
    approval_id: &str,
    responses: &InputResponses,
) -> Result<(), String> {
    let Some(raw) = responses.get(INPUT_KEY) else {
        return Err(format!(
            "the retry carries no `{INPUT_KEY}` input response for approval {approval_id}"
        ));
    };
    let result: ElicitResult = serde_json::from_value(raw.clone()).map_err(|e| {
        format!("the `{INPUT_KEY}` input response is not an elicitation result: {e}")
    })?;
    let Some(request) = book.get(approval_id) else {
        return Err(BookError::NotPending(approval_id.to_owned()).to_string());
    };
    let answer = answer_from(&result, &request);
    book.answer(approval_id, Some(agent), answer)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            id: "ap-1".into(),
            agent: "a".into(),
            request_id: "1".into(),
            tool: "fs.write".into(),
            call: "fs.write(/w/x)".into(),
            reason: "side effect".into(),
            suggested_rule: "fs.write(/w/x)".into(),
            args_fingerprint: "f".into(),
        }
    }

    #[test]
    fn the_form_and_the_input_request_are_valid_mcp() {
        let params = elicit_params(&request()).unwrap();
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(wire["mode"], "form");
        assert_eq!(
            wire["requestedSchema"]["properties"]["rule"]["default"],
            "fs.write(/w/x)"
        );
        let result = input_required(&request()).unwrap();
        assert_eq!(result.request_state.as_deref(), Some("ap-1"));
    }

    #[test]
    fn answers_map_from_the_form() {
        let r = request();
        let accept = |c: Value| -> ElicitResult {
            serde_json::from_value(json!({"action": "accept", "content": c})).unwrap()
        };
        assert_eq!(
            answer_from(&accept(json!({"decision": "allow_once"})), &r),
            ApprovalAnswer::AllowOnce
        );
        assert_eq!(
            answer_from(&accept(json!({"decision": "always_allow"})), &r),
            ApprovalAnswer::AlwaysAllow {
                rule: "fs.write(/w/x)".into()
            }
        );
        assert_eq!(
            answer_from(
                &accept(json!({"decision": "always_allow", "rule": "fs.write(/w/**)"})),
                &r
            ),
            ApprovalAnswer::AlwaysAllow {
                rule: "fs.write(/w/**)".into()
            }
        );
        assert!(matches!(
            answer_from(&accept(json!({"decision": "maybe"})), &r),
            ApprovalAnswer::Deny { .. }
        ));
        let decline: ElicitResult = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert!(matches!(
            answer_from(&decline, &r),
            ApprovalAnswer::Deny { .. }
        ));
    }
}
