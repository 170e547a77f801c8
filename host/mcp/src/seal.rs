//! Sealed `requestState` for asks answered through a 2026-07-28 client.
//!
//! Attack it stops: an agent answering its own ask. The retry of a call
//! carries `requestState` and `inputResponses` that the client writes, so
//! both are attacker-controlled. An input response counts only with a
//! state this server sealed when it sent that very agent the ask as an
//! input-required result: an HMAC (rmcp's `RequestStateCodec`, keyed from
//! the host key) over the approval id, bound to the agent and the call
//! (tool, specifier, argument fingerprint) as associated data, with the
//! approval's expiry inside. A forged, altered, expired state, or one
//! presented for another agent or another call, does not open; a state
//! replayed after its answer was used finds no waiting ask.
//!
//! A state also says what it was sent for ([`Purpose`]): a state sent with
//! a link to the console (the agent's client may only come back, not
//! answer) never opens as one sent with a form the client may answer.

use std::time::Duration;

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use warden_api::ApprovalRequest;

/// Seals and opens approval states with one host key.
#[derive(Clone)]
pub struct Sealer {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer")
    }
}

/// Why a state did not open. Deliberately coarse for the client; the
/// detail goes to the log and the audit record.
#[derive(Debug, thiserror::Error)]
#[error("the request state does not belong to this call: {0}")]
pub struct SealError(#[source] RequestStateError);

/// What a state was sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A form the person behind the client answers.
    Answer,
    /// A link to the pending approval in the console: an operator
    /// answers there; the client's retry only comes back for the result.
    Link,
}

/// What binds a state to its ask: its purpose, the agent and the exact
/// call.
fn binding(request: &ApprovalRequest, purpose: Purpose) -> Vec<u8> {
    [
        match purpose {
            Purpose::Answer => "warden-approval-state-v1",
            Purpose::Link => "warden-approval-link-v1",
        },
        &request.agent,
        &request.tool,
        &request.call,
        &request.args_fingerprint,
    ]
    .join("\0")
    .into_bytes()
}

/// What binds a question's state to the call it was put with: the
/// agent, the tool and the exact arguments.
fn question_binding(agent: &str, tool: &str, args: &serde_json::Value) -> Vec<u8> {
    [
        "warden-author-question-v1",
        agent,
        tool,
        &warden_api::canonical_json(args),
    ]
    .join("\0")
    .into_bytes()
}

impl Sealer {
    /// A sealer keyed with `key` (at least 32 bytes of secret material).
    pub fn new(key: &[u8]) -> Result<Sealer, crate::McpError> {
        RequestStateCodec::try_new(key.to_vec())
            .map(|codec| Sealer { codec })
            .map_err(|e| crate::McpError::Config(format!("the request-state key: {e}")))
    }

    /// The state for ask `request` (its id filled in), valid for `ttl`.
    pub fn seal(&self, request: &ApprovalRequest, ttl: Duration, purpose: Purpose) -> String {
        let binding = binding(request, purpose);
        self.codec.seal_with(
            request.id.as_bytes(),
            &SealOptions::new().associated_data(&binding).ttl(ttl),
        )
    }

    /// The state for the question about gap `signature` put to the
    /// model of `agent`'s client with its call of `tool` with `args`,
    /// valid for `ttl`.
    pub fn seal_question(
        &self,
        agent: &str,
        tool: &str,
        args: &serde_json::Value,
        signature: &str,
        ttl: Duration,
    ) -> String {
        self.codec.seal_with(
            signature.as_bytes(),
            &SealOptions::new()
                .associated_data(&question_binding(agent, tool, args))
                .ttl(ttl),
        )
    }

    /// The gap signature sealed in `state`, if it was sealed by this host
    /// for a question with this agent's call of `tool` with `args`, and
    /// has not expired.
    pub fn open_question(
        &self,
        state: &str,
        agent: &str,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<String, SealError> {
        let signature = self
            .codec
            .open_with(state, &question_binding(agent, tool, args))
            .map_err(SealError)?;
        String::from_utf8(signature).map_err(|_| SealError(RequestStateError::MalformedFormat))
    }

    /// The approval id sealed in `state`, if it was sealed by this host
    /// for `purpose` and the agent and call of `request`, and has not
    /// expired.
    pub fn open(
        &self,
        state: &str,
        request: &ApprovalRequest,
        purpose: Purpose,
    ) -> Result<String, SealError> {
        let id = self
            .codec
            .open_with(state, &binding(request, purpose))
            .map_err(SealError)?;
        String::from_utf8(id).map_err(|_| SealError(RequestStateError::MalformedFormat))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(agent: &str, call: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: "ap-7".into(),
            agent: agent.into(),
            request_id: "1".into(),
            tool: "fs_write".into(),
            call: call.into(),
            reason: "side effect".into(),
            suggested_rule: call.into(),
            args_fingerprint: "f1".into(),
            arguments: serde_json::Value::Null,
            always_offered: true,
        }
    }

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_state_opens_only_for_its_agent_and_call() {
        let sealer = Sealer::new(KEY).unwrap();
        let asked = ask("a", "fs_write(/w/x)");
        let state = sealer.seal(&asked, Duration::from_secs(60), Purpose::Answer);
        assert_eq!(
            sealer.open(&state, &asked, Purpose::Answer).unwrap(),
            "ap-7"
        );
        // Another agent, another call, other arguments.
        let open = |request: &ApprovalRequest| sealer.open(&state, request, Purpose::Answer);
        assert!(open(&ask("b", "fs_write(/w/x)")).is_err());
        assert!(open(&ask("a", "fs_write(/w/y)")).is_err());
        let mut other_args = asked.clone();
        other_args.args_fingerprint = "f2".into();
        assert!(sealer.open(&state, &other_args, Purpose::Answer).is_err());
    }

    #[test]
    fn forged_altered_and_foreign_states_do_not_open() {
        let sealer = Sealer::new(KEY).unwrap();
        let asked = ask("a", "fs_write(/w/x)");
        // The bare id, as the pre-sealing server sent it.
        assert!(sealer.open("ap-7", &asked, Purpose::Answer).is_err());
        assert!(sealer.open("", &asked, Purpose::Answer).is_err());
        // Every single-character change of a real state.
        let state = sealer.seal(&asked, Duration::from_secs(60), Purpose::Answer);
        for i in 0..state.len() {
            let mut bytes = state.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            if altered != state {
                assert!(
                    sealer.open(&altered, &asked, Purpose::Answer).is_err(),
                    "altered at {i}"
                );
            }
        }
        // Sealed by another host's key.
        let other = Sealer::new(b"another-host-key-0123456789abcdef").unwrap();
        assert!(
            sealer
                .open(
                    &other.seal(&asked, Duration::from_secs(60), Purpose::Answer),
                    &asked,
                    Purpose::Answer
                )
                .is_err()
        );
    }

    #[test]
    fn a_state_sent_with_a_link_never_opens_as_one_sent_with_a_form() {
        let sealer = Sealer::new(KEY).unwrap();
        let asked = ask("a", "fs_write(/w/x)");
        let link = sealer.seal(&asked, Duration::from_secs(60), Purpose::Link);
        assert_eq!(sealer.open(&link, &asked, Purpose::Link).unwrap(), "ap-7");
        assert!(sealer.open(&link, &asked, Purpose::Answer).is_err());
        let form = sealer.seal(&asked, Duration::from_secs(60), Purpose::Answer);
        assert!(sealer.open(&form, &asked, Purpose::Link).is_err());
    }

    #[test]
    fn an_expired_state_does_not_open() {
        let sealer = Sealer::new(KEY).unwrap();
        let asked = ask("a", "fs_write(/w/x)");
        let state = sealer.seal(&asked, Duration::from_millis(1), Purpose::Answer);
        std::thread::sleep(Duration::from_millis(20));
        let err = sealer.open(&state, &asked, Purpose::Answer).unwrap_err();
        assert!(matches!(err.0, RequestStateError::Expired), "{err:?}");
    }

    #[test]
    fn a_short_key_is_refused() {
        assert!(Sealer::new(b"short").is_err());
    }
}
