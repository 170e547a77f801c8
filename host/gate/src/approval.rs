//! Asking a person. An `ask` decision becomes an [`ApprovalRequest`]; an
//! [`Approver`] answers it. Implementations: [`NoApprover`] (nobody to ask:
//! every ask is denied with a message that says so), [`PendingApprovals`]
//! (held in memory until answered or expired; the durable store and the
//! MCP server implement the same trait later).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::oneshot;
use warden_api::{ApprovalAnswer, ApprovalRequest, Approver, BoxFuture};

/// Nobody to ask: every ask is denied, saying so.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoApprover;

impl Approver for NoApprover {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            ApprovalAnswer::Deny {
                reason: format!("no one is available to approve `{}` here", request.call),
            }
        })
    }
}

struct Waiting {
    request: ApprovalRequest,
    reply: oneshot::Sender<ApprovalAnswer>,
}

/// Approvals held in memory until a person answers or they expire (as a
/// denial).
pub struct PendingApprovals {
    next: AtomicU64,
    waiting: Mutex<BTreeMap<String, Waiting>>,
    expiry: Duration,
    /// Woken whenever a request starts waiting.
    asked: tokio::sync::Notify,
}

impl std::fmt::Debug for PendingApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingApprovals")
            .field("expiry", &self.expiry)
            .finish_non_exhaustive()
    }
}

impl PendingApprovals {
    pub fn new(expiry: Duration) -> PendingApprovals {
        PendingApprovals {
            next: AtomicU64::new(1),
            waiting: Mutex::new(BTreeMap::new()),
            expiry,
            asked: tokio::sync::Notify::new(),
        }
    }

    /// The oldest waiting request, as soon as there is one (what a prompt
    /// shows next).
    pub async fn next_pending(&self) -> ApprovalRequest {
        loop {
            let asked = self.asked.notified();
            if let Some(request) = self.pending().into_iter().next() {
                return request;
            }
            asked.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Requests waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        self.lock().values().map(|w| w.request.clone()).collect()
    }

    /// Answers a pending request. False if no such request is waiting.
    pub fn answer(&self, id: &str, answer: ApprovalAnswer) -> bool {
        match self.lock().remove(id) {
            Some(w) => w.reply.send(answer).is_ok(),
            None => false,
        }
    }
}

impl Approver for PendingApprovals {
    fn ask(&self, mut request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            let id = format!("ap-{}", self.next.fetch_add(1, Ordering::Relaxed));
            request.id = id.clone();
            let (reply, answer) = oneshot::channel();
            self.lock().insert(id.clone(), Waiting { request, reply });
            self.asked.notify_waiters();
            // Removed however this ends: answered, expired, or the call
            // itself dropped (a cancelled request leaves nothing pending).
            let _pending = Forget {
                approvals: self,
                id: &id,
            };
            let answer = tokio::time::timeout(self.expiry, answer).await;
            match answer {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => ApprovalAnswer::Deny {
                    reason: format!("approval {id} was dropped without an answer"),
                },
                Err(_) => ApprovalAnswer::Deny {
                    reason: format!(
                        "approval {id} expired after {} s without an answer",
                        self.expiry.as_secs()
                    ),
                },
            }
        })
    }
}

struct Forget<'a> {
    approvals: &'a PendingApprovals,
    id: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.approvals.lock().remove(self.id);
    }
}
