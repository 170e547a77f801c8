//! MCP sampling as an author (`[toolsmith] author-sampling`): when a
//! call makes a capability gap recurring and the client that sent it
//! declared sampling, the host asks that client's model for a blueprint.
//! The MCP layer puts the question (`sampling/createMessage` on older
//! protocol revisions, an input-required result on 2026-07-28) and hands
//! the answer back here.
//!
//! Attack: an agent passing off its own text as its client's model's
//! answer, to a question it was never asked, or answering one question
//! twice (outside `toolsmith_propose` and its limits). The host asks
//! only about a gap a call of that very agent just made recurring, and
//! keeps at most one answer per question, before its deadline, and only
//! a blueprint for the capability asked about. What it keeps is a
//! proposal like any other: read and derived by the host (name, grants,
//! limits), `pending` under `sampling:AGENT` with that author's own daily
//! limit, until a person approves `tool:create`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use warden_api::{AuthorBrief, ProposalRefused, ProposedBlueprint, SamplingAuthor};
use warden_toolsmith::Blueprint;

use super::Toolsmith;
use crate::ServerError;

/// Questions kept at once, of each kind; the oldest go first.
const KEPT: usize = 16;

/// How long a gap that became recurring waits for the call that made it
/// so to come back through its MCP session (it is taken as that call is
/// answered; a call from elsewhere never takes it).
const FRESH: Duration = Duration::from_secs(30);

/// The most tokens the model may write: a blueprint with its source.
const MAX_TOKENS: u32 = 16_384;

/// What the model is told a blueprint is (`{example}`: an SDK plugin).
const SYSTEM: &str = r#"You write tools for Warden, a tool host for AI agents. Agents asked for a capability no tool offers; write a blueprint for a tool that provides it. Answer with one JSON object and nothing else.

The blueprint's fields (any other field, at any depth, refuses it):
- "capability": the `domain:action` you are asked about, exactly.
- "title": one line, at most 120 characters; "description" and "rationale": at most 4096 characters each.
- "input_schema", "output_schema": JSON Schemas (2020-12) with "type": "object".
- "body": {"rust": {"lib_rs": "..."}}, the source of src/lib.rs against warden-sdk (the host writes Cargo.toml; serde and serde_json are the only other dependencies; no network, no files unless the grants say so).
- "cases": at least three, at least one success and one error: {"name": "...", "args": {...}, "expect": {"ok": {"equals": {...}}}} or {"ok": {"fields": [{"pointer": "/x", "equals": 1}]}} or {"error": {"contains": "..."}}.
- "witness": the arguments of a call like the ones agents made (the names they asked for are in the request); the tool must succeed with them.

The host names the tool (the request says its name), chooses its category, grants and limits; you cannot. The source is an ordinary SDK plugin whose one tool has that name, for example for gen_text_count:

{example}
A person reads the blueprint, its source and its cases before anything is built."#;

/// One question: a gap a call of `agent` in `session` made recurring.
#[derive(Debug, Clone)]
struct Question {
    agent: String,
    session: String,
    signature: String,
    at: Instant,
}

#[derive(Default)]
struct Questions {
    /// Recurring, not asked yet.
    recurring: VecDeque<Question>,
    /// Asked, waiting for the model's answer.
    asked: VecDeque<Question>,
}

/// The questions the host puts to clients' models, and their answers.
pub struct SamplingDesk {
    smith: Arc<Toolsmith>,
    deadline: Duration,
    questions: Mutex<Questions>,
    /// How many gaps wait to be asked about: zero costs a call nothing.
    waiting: AtomicUsize,
}

impl std::fmt::Debug for SamplingDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SamplingDesk")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

fn refused(e: impl std::fmt::Display) -> ProposalRefused {
    ProposalRefused {
        message: e.to_string(),
    }
}

/// The JSON object in what a model wrote: all of it, or what lies
/// between its first `{` and its last `}` (models wrap JSON in prose or
/// code fences). Whatever it is, it is then read as strictly as any
/// blueprint.
fn json_in(text: &str) -> &str {
    let trimmed = text.trim();
    if trimmed.starts_with('{') && trimmed.ends_with('}') {
        return trimmed;
    }
    match (trimmed.find('{'), trimmed.rfind('}')) {
        (Some(start), Some(end)) if start < end => &trimmed[start..=end],
        _ => trimmed,
    }
}

impl SamplingDesk {
    /// Questions for `smith`'s blueprints; the model has `deadline`.
    pub fn new(smith: Arc<Toolsmith>, deadline: Duration) -> SamplingDesk {
        SamplingDesk {
            smith,
            deadline,
            questions: Mutex::new(Questions::default()),
            waiting: AtomicUsize::new(0),
        }
    }

    fn questions(&self) -> std::sync::MutexGuard<'_, Questions> {
        self.questions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of `agent` in `session` made the gap `signature` recurring.
    pub fn recurred(&self, agent: &str, session: &str, signature: &str) {
        let mut q = self.questions();
        q.recurring.retain(|r| r.at.elapsed() < FRESH);
        if q.recurring.len() >= KEPT {
            q.recurring.pop_front();
        }
        q.recurring.push_back(Question {
            agent: agent.to_owned(),
            session: session.to_owned(),
            signature: signature.to_owned(),
            at: Instant::now(),
        });
        self.waiting.store(q.recurring.len(), Ordering::Release);
    }

    fn brief(&self, signature: &str) -> Result<AuthorBrief, ServerError> {
        let request = self.smith.author_request(signature)?;
        Ok(AuthorBrief {
            signature: signature.to_owned(),
            system: SYSTEM.replace("{example}", warden_toolsmith::EXAMPLE_LIB_RS),
            request: format!(
                "Write a blueprint for this recurring gap. The request, as JSON:\n{request}"
            ),
            max_tokens: MAX_TOKENS,
            deadline: self.deadline,
        })
    }

    /// The question `agent` was asked about `signature`, taken.
    fn answered(&self, agent: &str, signature: &str) -> Option<Question> {
        let mut q = self.questions();
        q.asked.retain(|a| a.at.elapsed() < self.deadline);
        let at = q
            .asked
            .iter()
            .position(|a| a.agent == agent && a.signature == signature)?;
        q.asked.remove(at)
    }
}

impl SamplingAuthor for SamplingDesk {
    fn take(&self, agent: &str, session: &str) -> Option<Result<AuthorBrief, ProposalRefused>> {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let question = {
            let mut q = self.questions();
            q.recurring.retain(|r| r.at.elapsed() < FRESH);
            let found = q
                .recurring
                .iter()
                .position(|r| r.agent == agent && r.session == session)
                .and_then(|at| q.recurring.remove(at));
            self.waiting.store(q.recurring.len(), Ordering::Release);
            let mut question = found?;
            question.at = Instant::now();
            q.asked.retain(|a| a.at.elapsed() < self.deadline);
            if q.asked.len() >= KEPT {
                q.asked.pop_front();
            }
            q.asked.push_back(question.clone());
            question
        };
        Some(self.brief(&question.signature).map_err(refused))
    }

    fn written(
        &self,
        agent: &str,
        signature: &str,
        text: &str,
    ) -> Result<ProposedBlueprint, ProposalRefused> {
        if self.answered(agent, signature).is_none() {
            return Err(refused(format!(
                "agent `{agent}`'s client was not asked for a blueprint for `{signature}`, or its \
                 answer was already taken, or came after the deadline ({} s)",
                self.deadline.as_secs()
            )));
        }
        let blueprint = Blueprint::parse(json_in(text), &self.smith.limits()).map_err(refused)?;
        if blueprint.capability != signature {
            return Err(refused(format!(
                "the model was asked for `{signature}` and wrote a blueprint for `{}`",
                blueprint.capability
            )));
        }
        self.smith.expire().map_err(refused)?;
        let stored = self
            .smith
            .keep(&blueprint, &format!("sampling:{agent}"))
            .map_err(refused)?;
        Ok(ProposedBlueprint {
            id: stored.id,
            name: stored.name,
            state: stored.state,
            blueprint_sha256: stored.blueprint_sha256,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::json_in;

    #[test]
    fn the_object_is_found_in_fences_and_prose() {
        assert_eq!(json_in(" {\"a\": 1} "), "{\"a\": 1}");
        assert_eq!(json_in("```json\n{\"a\": {}}\n```"), "{\"a\": {}}");
        assert_eq!(json_in("Here it is: {\"a\": 1}. Done."), "{\"a\": 1}");
        assert_eq!(json_in("no object"), "no object");
        assert_eq!(json_in("} backwards {"), "} backwards {");
    }
}
