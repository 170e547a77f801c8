#![allow(
    deprecated,
    reason = "sampling is deprecated by SEP-2577 in 2026-07-28, but the toolsmith's sampling author uses it on both protocol generations"
)]
//! The toolsmith's sampling author on the wire: when a call makes a
//! capability gap recurring and its client declared sampling, the
//! client's model is asked for a blueprint. On older protocol revisions
//! the server sends `sampling/createMessage` before it answers the call
//! and waits (at most the author deadline); on 2026-07-28 the call's
//! answer is an input-required result carrying that request, with a
//! sealed state, and the retry carries the model's message.
//!
//! Attack it stops: an agent passing off its own text as its client's
//! model's answer to a question it was never asked. A retry's `blueprint`
//! response counts only with a state this server sealed for this agent
//! and this exact call (see `seal.rs`); the toolsmith then keeps one
//! answer per question asked (see the server's `SamplingDesk`). A forged
//! or replayed answer is refused and the call is not run.

use rmcp::RoleServer;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, InputRequest, InputRequests,
    InputRequiredResult, SamplingMessageContentBlock,
};
use rmcp::service::Peer;
use serde_json::{Value, json};
use warden_api::{AuthorBrief, SamplingAuthor};

use crate::approve::Offered;
use crate::seal::Sealer;

/// The key of the model's message among an input-required result's
/// requests and the retry's responses.
pub(crate) const SAMPLING_KEY: &str = "blueprint";

/// The `sampling/createMessage` parameters for `brief`.
fn params(brief: &AuthorBrief) -> Result<CreateMessageRequestParams, String> {
    serde_json::from_value(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": brief.request}}],
        "systemPrompt": brief.system,
        "maxTokens": brief.max_tokens,
    }))
    .map_err(|e| format!("cannot build the sampling request: {e}"))
}

/// The text the model wrote (its text blocks, joined).
fn text_of(result: &CreateMessageResult) -> String {
    result
        .message
        .content
        .clone()
        .into_vec()
        .into_iter()
        .filter_map(|block| match block {
            SamplingMessageContentBlock::Text(t) => Some(t.text),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Hands what the model wrote for `signature` to the toolsmith, and logs
/// what became of it.
fn keep(author: &dyn SamplingAuthor, agent: &str, signature: &str, result: &CreateMessageResult) {
    match author.written(agent, signature, &text_of(result)) {
        Ok(kept) => tracing::info!(
            agent, signature, id = kept.id, name = %kept.name, model = %result.model,
            "the client's model wrote a blueprint; it waits for an operator's approval"
        ),
        Err(e) => tracing::warn!(
            agent, signature, model = %result.model, error = %e,
            "the blueprint the client's model wrote was not kept"
        ),
    }
}

/// Older protocol revisions: asks the client's model now and waits, at
/// most the author deadline.
pub(crate) async fn ask_now(
    author: &dyn SamplingAuthor,
    peer: &Peer<RoleServer>,
    agent: &str,
    brief: &AuthorBrief,
) {
    let params = match params(brief) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(agent, signature = %brief.signature, error = %e, "no blueprint asked for");
            return;
        }
    };
    match tokio::time::timeout(brief.deadline, peer.create_message(params)).await {
        Ok(Ok(result)) => keep(author, agent, &brief.signature, &result),
        Ok(Err(e)) => tracing::warn!(
            agent, signature = %brief.signature, error = %e,
            "the client's model wrote no blueprint"
        ),
        Err(_) => tracing::warn!(
            agent, signature = %brief.signature, deadline_secs = brief.deadline.as_secs(),
            "the client's model wrote no blueprint before the deadline (`[toolsmith] author-deadline-secs`)"
        ),
    }
}

/// 2026-07-28: the input-required result asking the client's model,
/// sealed for this agent's call of `tool` with `args`.
pub(crate) fn input_required(
    sealer: &Sealer,
    agent: &str,
    tool: &str,
    args: &Value,
    brief: &AuthorBrief,
) -> Result<InputRequiredResult, String> {
    let request = serde_json::from_value(json!({
        "method": "sampling/createMessage",
        "params": params(brief)?,
    }))
    .map_err(|e| format!("cannot build the sampling request: {e}"))?;
    let mut requests = InputRequests::new();
    requests.insert(
        SAMPLING_KEY.to_owned(),
        InputRequest::CreateMessage(request),
    );
    let state = sealer.seal_question(agent, tool, args, &brief.signature, brief.deadline);
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

/// What putting a question to the client's model after a call needs.
pub(crate) struct Question {
    pub author: std::sync::Arc<dyn SamplingAuthor>,
    pub agent: String,
    pub session: String,
    pub tool: String,
    /// The call's arguments, on 2026-07-28 when the client declared
    /// sampling (the question's state is sealed to them).
    pub args: Option<Value>,
    /// Whether the client declared sampling.
    pub sampling: bool,
}

impl Question {
    /// When the call made a gap recurring: on 2026-07-28 the
    /// input-required result that asks the client's model; on older
    /// revisions the model is asked now (and the call's own answer
    /// follows). Nothing when it made none, or the client cannot sample.
    pub(crate) async fn ask(
        self,
        sealer: &Sealer,
        peer: &Peer<RoleServer>,
        modern: bool,
    ) -> Option<InputRequiredResult> {
        let agent = self.agent.as_str();
        let brief = match self.author.take(agent, &self.session)? {
            Ok(brief) => brief,
            Err(e) => {
                tracing::warn!(agent, error = %e, "no blueprint asked for");
                return None;
            }
        };
        if !self.sampling {
            tracing::info!(
                agent, signature = %brief.signature,
                "a recurring gap: the client declared no sampling, so no model was asked for a blueprint"
            );
            return None;
        }
        if !modern {
            ask_now(self.author.as_ref(), peer, agent, &brief).await;
            return None;
        }
        let args = self.args.unwrap_or_default();
        match input_required(sealer, agent, &self.tool, &args, &brief) {
            Ok(input) => Some(input),
            Err(e) => {
                tracing::warn!(agent, error = %e, "no blueprint asked for");
                None
            }
        }
    }
}

/// Whether a retry answers a question put to the client's model.
pub(crate) fn answers_a_question(offered: &Offered) -> bool {
    offered.responses.contains_key(SAMPLING_KEY)
}

/// 2026-07-28: the retry of `agent`'s call of `tool` with `args` carries
/// the model's message; keeps it when the state is this server's for
/// this call, or says why not.
pub(crate) fn answer(
    author: Option<&dyn SamplingAuthor>,
    sealer: &Sealer,
    offered: &Offered,
    agent: &str,
    tool: &str,
    args: &Value,
) -> Result<(), String> {
    let Some(author) = author else {
        return Err(format!(
            "this server asks no model for blueprints: the `{SAMPLING_KEY}` input response \
             answers nothing"
        ));
    };
    let signature = sealer
        .open_question(&offered.state, agent, tool, args)
        .map_err(|e| {
            tracing::warn!(agent, tool, error = ?e, "a blueprint response's request state was refused");
            format!(
                "{e}; only the request state this server sent with this call's question counts, \
                 unaltered and before it expires"
            )
        })?;
    let raw = offered
        .responses
        .get(SAMPLING_KEY)
        .cloned()
        .unwrap_or_default();
    let result: CreateMessageResult = serde_json::from_value(raw).map_err(|e| {
        format!("the `{SAMPLING_KEY}` input response is not a sampling result: {e}")
    })?;
    author
        .written(agent, &signature, &text_of(&result))
        .map(|kept| {
            tracing::info!(
                agent, signature, id = kept.id, name = %kept.name, model = %result.model,
                "the client's model wrote a blueprint; it waits for an operator's approval"
            );
        })
        .map_err(|e| format!("the blueprint your client's model wrote was not kept: {e}"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn brief() -> AuthorBrief {
        AuthorBrief {
            signature: "words:count".into(),
            system: "You write tools.".into(),
            request: "{\"gap\": {}}".into(),
            max_tokens: 100,
            deadline: Duration::from_secs(60),
        }
    }

    #[test]
    fn the_question_is_valid_mcp_and_its_state_binds_the_call() {
        let sealer = Sealer::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let args = json!({"text": "a b"});
        let result = input_required(&sealer, "alice", "words_count", &args, &brief()).unwrap();
        let wire = serde_json::to_value(&result).unwrap();
        let request = &wire["inputRequests"][SAMPLING_KEY];
        assert_eq!(request["method"], "sampling/createMessage", "{wire}");
        assert_eq!(request["params"]["systemPrompt"], "You write tools.");
        assert_eq!(request["params"]["maxTokens"], 100);
        assert_eq!(
            request["params"]["messages"][0]["content"]["text"],
            "{\"gap\": {}}"
        );
        let state = result.request_state.unwrap();
        assert_eq!(
            sealer
                .open_question(&state, "alice", "words_count", &args)
                .unwrap(),
            "words:count"
        );
        for (agent, tool, args) in [
            ("bob", "words_count", json!({"text": "a b"})),
            ("alice", "other", json!({"text": "a b"})),
            ("alice", "words_count", json!({"text": "a c"})),
        ] {
            assert!(
                sealer.open_question(&state, agent, tool, &args).is_err(),
                "{agent} {tool} {args}"
            );
        }
    }

    #[test]
    fn the_models_text_blocks_are_read() {
        let result: CreateMessageResult = serde_json::from_value(json!({
            "model": "m", "role": "assistant",
            "content": [{"type": "text", "text": "{"}, {"type": "text", "text": "}"}]
        }))
        .unwrap();
        assert_eq!(text_of(&result), "{\n}");
    }
}
