//! The approvals book: asks that wait for a person without holding the
//! call open. An ask is written down under an id and the call returns at
//! once as pending; a person answers by id (`warden approvals`, the admin
//! API, or an MCP client's elicitation response); the agent's retry of
//! the same call finds the answer and consumes it. With a ledger (the
//! state database) every step is recorded before it takes effect, so
//! pending and answered approvals survive a restart and a used answer
//! stays used.
//!
//! Attacks it stops: an answer for one call being spent on another (an
//! answer is bound to the agent and to the exact tool and arguments it
//! was given for, and is used once — across restarts too), an answer
//! from the agent's side for an ask or a call it was not given for (a
//! client's answer is recorded only for the same agent and the same call
//! as the ask; whether the client may answer at all is the MCP layer's
//! sealed request state), and stale consent (unanswered asks expire as
//! denials, unused answers expire too).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use warden_api::{
    AnswerError, ApprovalAnswer, ApprovalLedger, ApprovalRequest, Approvals, Approver, BoxFuture,
    JournalError, OpenApproval,
};

use crate::{Clock, SystemClock};

struct Waiting {
    request: ApprovalRequest,
    key: String,
    asked_ms: u64,
}

struct Answered {
    id: String,
    answer: ApprovalAnswer,
    at_ms: u64,
}

struct Pages {
    /// By id.
    waiting: BTreeMap<String, Waiting>,
    /// The id of the waiting ask of each call key.
    waiting_by_key: HashMap<String, String>,
    /// By call key: answers not yet consumed by a retry.
    answered: BTreeMap<String, Answered>,
    /// No page is older than this: a sweep before then has nothing to do.
    oldest_ms: u64,
}

impl Default for Pages {
    fn default() -> Self {
        Pages {
            waiting: BTreeMap::new(),
            waiting_by_key: HashMap::new(),
            answered: BTreeMap::new(),
            oldest_ms: u64::MAX,
        }
    }
}

impl Pages {
    fn wait(&mut self, id: String, w: Waiting) {
        self.oldest_ms = self.oldest_ms.min(w.asked_ms);
        self.waiting_by_key.insert(w.key.clone(), id.clone());
        self.waiting.insert(id, w);
    }

    fn unwait(&mut self, id: &str) -> Option<Waiting> {
        let w = self.waiting.remove(id)?;
        self.waiting_by_key.remove(&w.key);
        Some(w)
    }

    fn answered(&mut self, key: String, a: Answered) {
        self.oldest_ms = self.oldest_ms.min(a.at_ms);
        self.answered.insert(key, a);
    }

    /// Takes an approval as the ledger holds it: waiting, or answered.
    fn take(&mut self, open: OpenApproval) {
        let id = open.request.id.clone();
        match open.answer {
            None => self.wait(
                id,
                Waiting {
                    request: open.request,
                    key: open.key,
                    asked_ms: open.asked_ms,
                },
            ),
            Some((answer, at_ms)) => self.answered(open.key, Answered { id, answer, at_ms }),
        }
    }
}

/// Asks waiting for a person, and answers waiting for a retry.
pub struct ApprovalBook {
    next: AtomicU64,
    pages: Mutex<Pages>,
    expiry: Duration,
    ledger: Option<Arc<dyn ApprovalLedger>>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ApprovalBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBook")
            .field("expiry", &self.expiry)
            .field("durable", &self.ledger.is_some())
            .finish_non_exhaustive()
    }
}

/// What binds an answer to a call: the agent, the tool and the exact call
/// the policy saw (`tool(specifier)`, which includes the arguments that
/// matter to the policy), plus the request's arguments.
fn key(request: &ApprovalRequest) -> String {
    format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        request.agent, request.tool, request.call, request.args_fingerprint
    )
}

impl ApprovalBook {
    /// Unanswered asks, and answers nobody retried for, expire after
    /// `expiry`. Kept in memory only.
    pub fn new(expiry: Duration) -> ApprovalBook {
        ApprovalBook {
            next: AtomicU64::new(1),
            pages: Mutex::new(Pages::default()),
            expiry,
            ledger: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// Expiry is judged by `clock` (the gate's). Default: the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> ApprovalBook {
        self.clock = clock;
        self
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// A book recorded in `ledger`, starting from what it holds.
    pub fn durable(
        expiry: Duration,
        ledger: Arc<dyn ApprovalLedger>,
    ) -> Result<ApprovalBook, JournalError> {
        let mut pages = Pages::default();
        for open in ledger.open()? {
            pages.take(open);
        }
        Ok(ApprovalBook {
            // Unused: a durable book's ids come from its ledger.
            next: AtomicU64::new(1),
            pages: Mutex::new(pages),
            expiry,
            ledger: Some(ledger),
            clock: Arc::new(SystemClock),
        })
    }

    pub fn expiry(&self) -> Duration {
        self.expiry
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn expired(&self, since_ms: u64, now_ms: u64) -> bool {
        u128::from(now_ms.saturating_sub(since_ms)) >= self.expiry.as_millis()
    }

    /// Moves expired asks to answered denials and drops stale answers.
    /// Cheap while nothing can have expired yet.
    fn sweep(&self, pages: &mut Pages, now: u64) {
        if !self.expired(pages.oldest_ms, now) {
            return;
        }
        let expired: Vec<String> = pages
            .waiting
            .iter()
            .filter(|(_, w)| self.expired(w.asked_ms, now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if let Some(w) = pages.unwait(&id) {
                let reason = format!(
                    "approval {id} expired after {} s without an answer",
                    self.expiry.as_secs()
                );
                let answer = ApprovalAnswer::Deny { reason };
                if let Some(ledger) = &self.ledger
                    && let Err(e) = ledger.answered(&w.request, &answer, "expiry", now)
                {
                    // Denying in memory is safe even if not recorded: after
                    // a restart the ask is still pending and expires again.
                    tracing::warn!(approval = %id, error = %e, "expiry not recorded");
                }
                pages.answered(
                    w.key,
                    Answered {
                        id,
                        answer,
                        at_ms: now,
                    },
                );
            }
        }
        let stale: Vec<String> = pages
            .answered
            .iter()
            .filter(|(_, a)| self.expired(a.at_ms, now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            if let Some(a) = pages.answered.remove(&key)
                && let Some(ledger) = &self.ledger
                && let Err(e) = ledger.dropped(&a.id, now)
            {
                tracing::warn!(approval = %a.id, error = %e, "stale answer not recorded as dropped");
            }
        }
        pages.oldest_ms = pages
            .waiting
            .values()
            .map(|w| w.asked_ms)
            .chain(pages.answered.values().map(|a| a.at_ms))
            .min()
            .unwrap_or(u64::MAX);
    }

    /// Asks waiting for an answer, oldest first: with a ledger, also
    /// those asked through other processes sharing it.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        let mut pages = self.lock();
        if let Some(ledger) = &self.ledger {
            match ledger.open() {
                Ok(open) => {
                    for open in open {
                        if !pages.waiting.contains_key(&open.request.id)
                            && !pages.answered.contains_key(&open.key)
                        {
                            pages.take(open);
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "reading approvals failed"),
            }
        }
        self.sweep(&mut pages, self.now_ms());
        let mut list: Vec<_> = pages.waiting.values().map(|w| w.request.clone()).collect();
        list.sort_by_key(|r| id_number(&r.id));
        list
    }

    /// The waiting ask `id`, if any (with a ledger, also one asked
    /// through another process sharing it).
    pub fn get(&self, id: &str) -> Option<ApprovalRequest> {
        let mut pages = self.lock();
        if !pages.waiting.contains_key(id) {
            self.adopt(&mut pages, id);
        }
        self.sweep(&mut pages, self.now_ms());
        pages.waiting.get(id).map(|w| w.request.clone())
    }

    /// Records an operator's answer to the waiting ask `id`; the agent's
    /// next try of the same call receives it. The answer counts only once
    /// it is recorded.
    pub fn answer(&self, id: &str, answer: ApprovalAnswer) -> Result<ApprovalRequest, AnswerError> {
        self.record(id, None, answer, "operator")
    }

    /// [`ApprovalBook::answer`] naming who answered in the audit record
    /// (`by`, for example `console:dana`).
    pub fn answer_by(
        &self,
        id: &str,
        answer: ApprovalAnswer,
        by: &str,
    ) -> Result<ApprovalRequest, AnswerError> {
        self.record(id, None, answer, by)
    }

    /// Records the answer the person behind the agent's client sent with
    /// a retry of `asked`: only for the ask `id` of that same agent and
    /// that same call (tool, specifier, arguments).
    pub fn answer_for_call(
        &self,
        id: &str,
        asked: &ApprovalRequest,
        answer: ApprovalAnswer,
    ) -> Result<ApprovalRequest, AnswerError> {
        self.record(id, Some(asked), answer, "client")
    }

    fn record(
        &self,
        id: &str,
        asked: Option<&ApprovalRequest>,
        answer: ApprovalAnswer,
        by: &str,
    ) -> Result<ApprovalRequest, AnswerError> {
        let mut pages = self.lock();
        let now = self.now_ms();
        self.sweep(&mut pages, now);
        if !pages.waiting.contains_key(id) {
            // Asked through another process sharing the ledger (a replica,
            // `warden call`): answerable here too.
            self.adopt(&mut pages, id);
        }
        let Some(w) = pages.waiting.get(id) else {
            return Err(AnswerError::NotPending(id.to_owned()));
        };
        if let Some(asked) = asked {
            if asked.agent != w.request.agent {
                return Err(AnswerError::WrongAgent {
                    id: id.to_owned(),
                    owner: w.request.agent.clone(),
                    agent: asked.agent.clone(),
                });
            }
            if key(asked) != w.key {
                return Err(AnswerError::OtherCall(id.to_owned()));
            }
        }
        if let Some(ledger) = &self.ledger {
            ledger
                .answered(&w.request, &answer, by, now)
                .map_err(|source| AnswerError::NotRecorded {
                    id: id.to_owned(),
                    source,
                })?;
        }
        let Some(w) = pages.unwait(id) else {
            return Err(AnswerError::NotPending(id.to_owned()));
        };
        pages.answered(
            w.key,
            Answered {
                id: id.to_owned(),
                answer,
                at_ms: now,
            },
        );
        Ok(w.request)
    }

    /// The answer for this call if a person gave one (consumed), else the
    /// id it waits under (written down on first ask).
    fn lookup(&self, mut request: ApprovalRequest) -> ApprovalAnswer {
        let key = key(&request);
        let mut pages = self.lock();
        let now = self.now_ms();
        self.sweep(&mut pages, now);
        if !pages.answered.contains_key(&key) && !pages.waiting_by_key.contains_key(&key) {
            // Asked through another process sharing the ledger? (What this
            // takes is the ledger's state now: nothing to refresh.)
            self.adopt_by_key(&mut pages, &key);
        } else if let Some(id) = pages.waiting_by_key.get(&key).cloned() {
            // Answered through another process sharing the ledger?
            self.refresh(&mut pages, &id);
        }
        if let Some(answered) = pages.answered.get(&key) {
            let used = match &self.ledger {
                None => true,
                Some(ledger) => match ledger.consumed(&answered.id, now) {
                    Ok(used) => used,
                    // Unrecorded use could be used again after a restart.
                    Err(e) => {
                        return ApprovalAnswer::Deny {
                            reason: format!(
                                "the answer to approval {} could not be marked used ({e}); retry",
                                answered.id
                            ),
                        };
                    }
                },
            };
            if let Some(answered) = pages.answered.remove(&key) {
                if used {
                    tracing::info!(approval = %answered.id, "answer consumed");
                    return answered.answer;
                }
                // Another process sharing the ledger used (or dropped)
                // it first: this retry asks afresh.
                tracing::info!(approval = %answered.id, "answer already used elsewhere");
            }
        }
        if let Some(id) = pages.waiting_by_key.get(&key) {
            return ApprovalAnswer::Pending { id: id.clone() };
        }
        // A durable book's ids come from its ledger, which numbers them
        // for every process sharing it; a book in memory counts alone.
        let id = match &self.ledger {
            Some(ledger) => {
                let open = OpenApproval {
                    request: request.clone(),
                    key: key.clone(),
                    asked_ms: now,
                    answer: None,
                };
                match ledger.asked(&open) {
                    Ok(id) => id,
                    Err(e) => {
                        return ApprovalAnswer::Deny {
                            reason: format!("the approval could not be recorded ({e}); retry"),
                        };
                    }
                }
            }
            None => format!("ap-{}", self.next.fetch_add(1, Ordering::Relaxed)),
        };
        request.id = id.clone();
        pages.wait(
            id.clone(),
            Waiting {
                request,
                key,
                asked_ms: now,
            },
        );
        ApprovalAnswer::Pending { id }
    }
}

impl ApprovalBook {
    /// Takes the ask `id`, pending in the ledger but unknown here, into
    /// the waiting pages.
    fn adopt(&self, pages: &mut Pages, id: &str) {
        let Some(ledger) = &self.ledger else {
            return;
        };
        match ledger.get(id) {
            Ok(Some(open)) => pages.take(open),
            Ok(None) => {}
            Err(e) => tracing::warn!(approval = %id, error = %e, "reading an approval failed"),
        }
    }

    /// Takes the open approval of the call `key`, asked through another
    /// process sharing the ledger, into the pages: waiting, or answered.
    fn adopt_by_key(&self, pages: &mut Pages, key: &str) {
        let Some(ledger) = &self.ledger else {
            return;
        };
        match ledger.by_key(key) {
            Ok(Some(open)) => pages.take(open),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "reading approvals failed"),
        }
    }

    /// Brings the waiting ask `id` up to date with the ledger: answered
    /// there (through another process), it moves to the answers; gone
    /// there (used or dropped elsewhere), it goes.
    fn refresh(&self, pages: &mut Pages, id: &str) {
        let Some(ledger) = &self.ledger else {
            return;
        };
        match ledger.get(id) {
            Ok(Some(OpenApproval { answer: None, .. })) => {}
            Ok(Some(OpenApproval {
                key,
                answer: Some((answer, at_ms)),
                ..
            })) => {
                pages.unwait(id);
                pages.answered(
                    key,
                    Answered {
                        id: id.to_owned(),
                        answer,
                        at_ms,
                    },
                );
            }
            Ok(None) => {
                pages.unwait(id);
            }
            // Unreadable: the ask stays pending here.
            Err(e) => tracing::warn!(approval = %id, error = %e, "reading an approval failed"),
        }
    }
}

fn id_number(id: &str) -> u64 {
    id.strip_prefix("ap-")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

impl Approver for ApprovalBook {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(std::future::ready(self.lookup(request)))
    }
}

impl Approvals for ApprovalBook {
    fn expiry(&self) -> Duration {
        ApprovalBook::expiry(self)
    }

    fn pending(&self) -> Vec<ApprovalRequest> {
        ApprovalBook::pending(self)
    }

    fn get(&self, id: &str) -> Option<ApprovalRequest> {
        ApprovalBook::get(self, id)
    }

    fn answer(&self, id: &str, answer: ApprovalAnswer) -> Result<ApprovalRequest, AnswerError> {
        ApprovalBook::answer(self, id, answer)
    }

    fn answer_by(
        &self,
        id: &str,
        answer: ApprovalAnswer,
        by: &str,
    ) -> Result<ApprovalRequest, AnswerError> {
        ApprovalBook::answer_by(self, id, answer, by)
    }

    fn answer_for_call(
        &self,
        id: &str,
        asked: &ApprovalRequest,
        answer: ApprovalAnswer,
    ) -> Result<ApprovalRequest, AnswerError> {
        ApprovalBook::answer_for_call(self, id, asked, answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(agent: &str, call: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: String::new(),
            agent: agent.into(),
            request_id: "r1".into(),
            tool: "fs_write".into(),
            call: call.into(),
            reason: "side effect".into(),
            suggested_rule: call.into(),
            args_fingerprint: "{}".into(),
            arguments: serde_json::Value::Null,
            always_offered: true,
        }
    }

    fn pending_id(answer: ApprovalAnswer) -> String {
        match answer {
            ApprovalAnswer::Pending { id } => id,
            other => panic!("expected pending, got {other:?}"),
        }
    }

    #[test]
    fn an_answer_is_bound_to_its_call_and_used_once() {
        let book = ApprovalBook::new(Duration::from_secs(60));
        let id = pending_id(book.lookup(ask("a", "fs_write(/x)")));
        assert_eq!(pending_id(book.lookup(ask("a", "fs_write(/x)"))), id);
        assert_eq!(book.pending().len(), 1);
        book.answer(&id, ApprovalAnswer::AllowOnce).unwrap();
        // A different call does not get the answer.
        let other = pending_id(book.lookup(ask("a", "fs_write(/y)")));
        assert_ne!(other, id);
        assert_eq!(
            book.lookup(ask("a", "fs_write(/x)")),
            ApprovalAnswer::AllowOnce
        );
        // Used once: the next try asks again.
        let again = pending_id(book.lookup(ask("a", "fs_write(/x)")));
        assert_ne!(again, id);
    }

    #[test]
    fn another_agent_cannot_answer_or_reuse() {
        let book = ApprovalBook::new(Duration::from_secs(60));
        let id = pending_id(book.lookup(ask("a", "fs_write(/x)")));
        assert!(matches!(
            book.answer_for_call(&id, &ask("b", "fs_write(/x)"), ApprovalAnswer::AllowOnce),
            Err(AnswerError::WrongAgent { .. })
        ));
        assert!(matches!(
            book.answer_for_call(&id, &ask("a", "fs_write(/y)"), ApprovalAnswer::AllowOnce),
            Err(AnswerError::OtherCall(other)) if other == id
        ));
        book.answer_for_call(&id, &ask("a", "fs_write(/x)"), ApprovalAnswer::AllowOnce)
            .unwrap();
        assert!(matches!(
            book.lookup(ask("b", "fs_write(/x)")),
            ApprovalAnswer::Pending { .. }
        ));
        assert!(matches!(
            book.answer(&id, ApprovalAnswer::AllowOnce),
            Err(AnswerError::NotPending(other)) if other == id
        ));
    }

    #[test]
    fn unanswered_asks_expire_as_denials() {
        let book = ApprovalBook::new(Duration::from_millis(0));
        let id = pending_id(book.lookup(ask("a", "fs_write(/x)")));
        assert!(book.pending().is_empty());
        assert!(book.answer(&id, ApprovalAnswer::AllowOnce).is_err());
    }
}
