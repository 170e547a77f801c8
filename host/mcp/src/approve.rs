//! Asks answered by the person behind the MCP client, or linked to the
//! operator console.
//!
//! Who answers is per agent (`approvals = "client" | "operator"`, see
//! [`crate::ServerOptions`]). For a client-answered agent whose client
//! declared form elicitation: on an older protocol revision the server
//! sends `elicitation/create` and the call waits for the answer (up to
//! the approval expiry); on 2026-07-28 the ask is written in the
//! approvals book and returned as an input-required result whose request
//! state is sealed (see `seal.rs`), and the retry carries the answer.
//! For an operator-answered agent whose 2026-07-28 client declared URL
//! elicitation, when this server has a console: the input-required
//! result carries a link to the pending approval in the console, where
//! an operator answers; the client's retry comes back for the result and
//! answers nothing. Every other ask is a pending approval naming its id,
//! answered by an operator through the console, `warden approvals` or
//! the admin API; the agent retries.
//!
//! Attack it stops: an agent approving its own asks. An input response is
//! honoured only with a state this server sealed for this agent and this
//! exact call, before it expires, while the ask still waits, and only on
//! a connection whose agent's asks the client may answer; anything else
//! is refused (and audited by the gate) and the ask keeps waiting. A
//! retry after a console link records nothing, whatever its responses
//! say. What a client's answer may make permanent is bounded by the
//! gate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use rmcp::service::Peer;
use serde_json::{Value, json};
use warden_api::{Answerer, ApprovalAnswer, ApprovalRequest, Approver, BoxFuture};

use crate::seal::{Purpose, Sealer};

/// The key of the approval question among an input-required result's
/// requests.
pub(crate) const INPUT_KEY: &str = "approval";

/// What the person reads: the call, every argument, and why it asks.
fn message(request: &ApprovalRequest) -> String {
    let arguments = serde_json::to_string_pretty(&request.arguments)
        .unwrap_or_else(|_| request.arguments.to_string());
    let always = if request.always_offered {
        ""
    } else {
        "\n(Only an operator can allow this for good; you can allow it once.)"
    };
    format!(
        "Agent `{}` wants to run {}\nArguments:\n{arguments}\nWhy this asks: {}{always}\nAllow it?",
        request.agent, request.call, request.reason
    )
}

/// The form a person fills in: a decision and, when "always allow" may be
/// offered, the rule it adds (prefilled with the exact call, which is
/// also the broadest rule a client's answer may add).
pub(crate) fn elicit_params(request: &ApprovalRequest) -> Result<ElicitRequestParams, String> {
    let mut choices = vec![json!({"const": "allow_once", "title": "Allow once"})];
    let mut properties = serde_json::Map::new();
    if request.always_offered {
        choices.push(json!({"const": "always_allow", "title": "Always allow exactly this call"}));
        properties.insert(
            "rule".into(),
            json!({
                "type": "string",
                "title": "Allow rule (for always allow; no broader than this call)",
                "default": request.suggested_rule
            }),
        );
    }
    choices.push(json!({"const": "deny", "title": "Deny"}));
    properties.insert(
        "decision".into(),
        json!({"type": "string", "title": "Decision", "oneOf": choices}),
    );
    properties.insert(
        "reason".into(),
        json!({"type": "string", "title": "Reason (for deny)"}),
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message(request),
        "requestedSchema": {
            "type": "object",
            "properties": properties,
            "required": ["decision"]
        }
    }))
    .map_err(|e| format!("cannot build the approval form: {e}"))
}

/// A person's answer from an elicitation result. Declining or cancelling
/// the form denies; "always allow" without a rule uses the suggested one.
/// The answer is the client's: the gate bounds what it may add.
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
                by: Answerer::Client,
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

/// The answer a 2026-07-28 client sent with its retry of a call.
pub(crate) struct Offered {
    pub state: String,
    pub responses: InputResponses,
}

/// How a pending ask reaches the person on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// The agent's asks are the client's to answer, and its client
    /// declared form elicitation: a form.
    Form,
    /// The agent's asks are an operator's, and its 2026-07-28 client
    /// declared URL elicitation: a link to the approval in the console
    /// served at this base URL.
    Link(String),
    /// Neither: the pending result names the approval.
    Nothing,
}

/// Asks the book for a call on a client connection: first checks what
/// the client sent with this retry (recording an answer only when the
/// client may give one), then looks the call up; remembers an ask it
/// left pending, so the handler can turn it into an input-required
/// result.
pub(crate) struct ClientAsk {
    pub book: Arc<dyn warden_api::Approvals>,
    pub sealer: Sealer,
    pub prompt: Prompt,
    pub offered: Option<Offered>,
    pub pending: Mutex<Option<ApprovalRequest>>,
    /// The person did not follow the console link (declined or
    /// cancelled): the agent gets the pending result, not the link again.
    pub stepped_back: AtomicBool,
}

fn refuse(id: Option<&str>, reason: String) -> ApprovalAnswer {
    ApprovalAnswer::Refused {
        id: id.map(str::to_owned),
        reason,
    }
}

impl ClientAsk {
    /// Checks the offered input for `request` and records the answer it
    /// carries when the client may answer, or says why not (as the
    /// refusal the gate reports and audits).
    fn accept(&self, offered: &Offered, request: &ApprovalRequest) -> Result<(), ApprovalAnswer> {
        match self.prompt {
            Prompt::Form => self.record(offered, request),
            Prompt::Link(_) => {
                // Only the seal is checked: the retry comes back for the
                // result and the book says what an operator answered.
                let id = self.open(offered, request, Purpose::Link)?;
                let followed = self.response(offered, &id)?.action == ElicitationAction::Accept;
                self.stepped_back.store(!followed, Ordering::Relaxed);
                Ok(())
            }
            Prompt::Nothing => Err(refuse(
                None,
                format!(
                    "agent `{}`'s asks are answered by an operator (the console, `warden \
                     approvals` or the admin API), not by input responses from its own connection",
                    request.agent
                ),
            )),
        }
    }

    /// The approval id sealed in the offered state for `purpose`.
    fn open(
        &self,
        offered: &Offered,
        request: &ApprovalRequest,
        purpose: Purpose,
    ) -> Result<String, ApprovalAnswer> {
        self.sealer
            .open(&offered.state, request, purpose)
            .map_err(|e| {
                tracing::warn!(agent = %request.agent, call = %request.call, error = ?e, "an input response's request state was refused");
                refuse(
                    None,
                    format!(
                        "{e}; only the request state this server sent with this call's ask \
                         counts, unaltered and before it expires"
                    ),
                )
            })
    }

    /// The elicitation result among the offered responses.
    fn response(&self, offered: &Offered, id: &str) -> Result<ElicitResult, ApprovalAnswer> {
        let Some(raw) = offered.responses.get(INPUT_KEY) else {
            return Err(refuse(
                Some(id),
                format!("the retry carries no `{INPUT_KEY}` input response"),
            ));
        };
        serde_json::from_value(raw.clone()).map_err(|e| {
            refuse(
                Some(id),
                format!("the `{INPUT_KEY}` input response is not an elicitation result: {e}"),
            )
        })
    }

    /// Records the client's answer to the form it was sent.
    fn record(&self, offered: &Offered, request: &ApprovalRequest) -> Result<(), ApprovalAnswer> {
        let id = self.open(offered, request, Purpose::Answer)?;
        let result = self.response(offered, &id)?;
        let Some(asked) = self.book.get(&id) else {
            return Err(refuse(
                None,
                format!("approval {id} is no longer waiting: it was answered, used or has expired"),
            ));
        };
        let answer = answer_from(&result, &asked);
        self.book
            .answer_for_call(&id, request, answer)
            .map(drop)
            .map_err(|e| refuse(Some(&id), e.to_string()))
    }

    /// The ask this call left pending, with how to put it to the person;
    /// none when the pending result is the answer.
    pub(crate) fn input_required(
        &self,
        expiry: Duration,
    ) -> Option<Result<InputRequiredResult, String>> {
        let link = match &self.prompt {
            Prompt::Form => None,
            Prompt::Link(_) if self.stepped_back.load(Ordering::Relaxed) => return None,
            Prompt::Link(base) => Some(base.as_str()),
            Prompt::Nothing => return None,
        };
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()?;
        Some(input_required(&pending, &self.sealer, expiry, link))
    }
}

impl Approver for ClientAsk {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            if let Some(offered) = &self.offered
                && let Err(refused) = self.accept(offered, &request)
            {
                return refused;
            }
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

/// Where the console shows pending approval `id`, under `base`.
pub(crate) fn console_link(base: &str, id: &str) -> String {
    let mut url = format!("{}/console/approvals/", base.trim_end_matches('/'));
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// What the client shows beside the console link.
fn link_message(request: &ApprovalRequest) -> String {
    format!(
        "Agent `{}` wants to run {}. Why this asks: {}\nOnly an operator can answer it: open \
         approval {} in the Warden console to approve or deny it, then come back for the result.",
        request.agent, request.call, request.reason, request.id
    )
}

/// The input-required result for a pending ask (2026-07-28), its state
/// sealed for this agent and call until the ask expires: the approval
/// form, or with `link` (the console's base URL) a link to the ask in
/// the console.
pub(crate) fn input_required(
    request: &ApprovalRequest,
    sealer: &Sealer,
    ttl: Duration,
    link: Option<&str>,
) -> Result<InputRequiredResult, String> {
    let (params, purpose) = match link {
        None => (elicit_params(request)?, Purpose::Answer),
        Some(base) => (
            ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: link_message(request),
                url: console_link(base, &request.id),
                elicitation_id: request.id.clone(),
            },
            Purpose::Link,
        ),
    };
    let elicit = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": params,
    }))
    .map_err(|e| format!("cannot build the approval request: {e}"))?;
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_owned(), InputRequest::Elicitation(elicit));
    Ok(InputRequiredResult::new(
        Some(requests),
        Some(sealer.seal(request, ttl, purpose)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            id: "ap-1".into(),
            agent: "a".into(),
            request_id: "1".into(),
            tool: "fs_write".into(),
            call: "fs_write(/w/x)".into(),
            reason: "side effect".into(),
            suggested_rule: "fs_write(/w/x)".into(),
            args_fingerprint: "f".into(),
            arguments: json!({"path": "/w/x", "content": "hi"}),
            always_offered: true,
        }
    }

    #[test]
    fn the_form_and_the_input_request_are_valid_mcp() {
        let params = elicit_params(&request()).unwrap();
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(wire["mode"], "form");
        assert_eq!(
            wire["requestedSchema"]["properties"]["rule"]["default"],
            "fs_write(/w/x)"
        );
        assert!(
            wire["message"]
                .as_str()
                .unwrap()
                .contains("\"content\": \"hi\"")
        );
        let sealer = Sealer::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let result = input_required(&request(), &sealer, Duration::from_secs(60), None).unwrap();
        let state = result.request_state.unwrap();
        assert_ne!(state, "ap-1", "the state is sealed, not the bare id");
        assert_eq!(
            sealer.open(&state, &request(), Purpose::Answer).unwrap(),
            "ap-1"
        );
    }

    #[test]
    fn a_console_link_is_a_url_request_whose_state_answers_nothing() {
        let sealer = Sealer::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let result = input_required(
            &request(),
            &sealer,
            Duration::from_secs(60),
            Some("https://warden.example/"),
        )
        .unwrap();
        let wire = serde_json::to_value(&result).unwrap();
        let params = &wire["inputRequests"][INPUT_KEY]["params"];
        assert_eq!(params["mode"], "url", "{wire}");
        assert_eq!(
            params["url"],
            "https://warden.example/console/approvals/ap-1"
        );
        assert!(params.get("requestedSchema").is_none(), "{wire}");
        let state = result.request_state.unwrap();
        assert_eq!(
            sealer.open(&state, &request(), Purpose::Link).unwrap(),
            "ap-1"
        );
        assert!(
            sealer.open(&state, &request(), Purpose::Answer).is_err(),
            "a link's state never opens as a form's"
        );
    }

    #[test]
    fn console_links_encode_what_an_id_could_smuggle() {
        assert_eq!(
            console_link("http://127.0.0.1:8080", "ap-7"),
            "http://127.0.0.1:8080/console/approvals/ap-7"
        );
        assert_eq!(
            console_link("http://h", "../../x?y#z"),
            "http://h/console/approvals/..%2F..%2Fx%3Fy%23z"
        );
    }

    #[test]
    fn always_is_not_offered_when_only_an_operator_may_give_it() {
        let mut r = request();
        r.always_offered = false;
        let wire = serde_json::to_value(elicit_params(&r).unwrap()).unwrap();
        let choices = wire["requestedSchema"]["properties"]["decision"]["oneOf"].to_string();
        assert!(!choices.contains("always_allow"), "{choices}");
        assert!(wire["requestedSchema"]["properties"].get("rule").is_none());
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
                rule: "fs_write(/w/x)".into(),
                by: Answerer::Client,
            }
        );
        assert_eq!(
            answer_from(
                &accept(json!({"decision": "always_allow", "rule": "fs_write(/w/**)"})),
                &r
            ),
            ApprovalAnswer::AlwaysAllow {
                rule: "fs_write(/w/**)".into(),
                by: Answerer::Client,
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
