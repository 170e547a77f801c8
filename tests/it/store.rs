//! The approvals book on a real state database: pending and answered
//! approvals survive a restart, an answer is used once across restarts,
//! and ids are never reused.

use std::sync::Arc;
use std::time::Duration;

use warden_api::{ApprovalAnswer, ApprovalRequest, Approver};
use warden_gate::ApprovalBook;
use warden_store::{Hooks, SqliteStore, Store, host_key};

fn open(dir: &std::path::Path) -> (Arc<dyn Store>, ApprovalBook) {
    let key = host_key(&dir.join("host.key")).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.join("warden.db"), key).unwrap());
    let book =
        ApprovalBook::durable(Duration::from_secs(600), Arc::new(Hooks(store.clone()))).unwrap();
    (store, book)
}

fn ask(path: &str) -> ApprovalRequest {
    ApprovalRequest {
        id: String::new(),
        agent: "a".into(),
        request_id: "r1".into(),
        tool: "fs_write".into(),
        call: format!("fs_write({path})"),
        reason: "side effects".into(),
        suggested_rule: format!("fs_write({path})"),
        args_fingerprint: "sha256:00".into(),
        arguments: serde_json::Value::Null,
        always_offered: true,
    }
}

async fn pending(book: &ApprovalBook, path: &str) -> String {
    match book.ask(ask(path)).await {
        ApprovalAnswer::Pending { id } => id,
        other => panic!("expected pending, got {other:?}"),
    }
}

#[tokio::test]
async fn approvals_survive_restarts_and_are_used_once() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let (_, book) = open(dir.path());
        let id = pending(&book, "/x").await;
        pending(&book, "/y").await;
        id
    };
    // Restart: both still pending, under the same ids.
    let (_, book) = open(dir.path());
    let ids: Vec<String> = book.pending().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![first.clone(), "ap-2".to_owned()]);
    assert_eq!(pending(&book, "/x").await, first);
    book.answer(&first, ApprovalAnswer::AllowOnce).unwrap();
    drop(book);

    // Restart: the answer waits for the retry, which uses it.
    let (store, book) = open(dir.path());
    assert_eq!(book.ask(ask("/x")).await, ApprovalAnswer::AllowOnce);
    drop(book);

    // Restart: used means used; a new ask gets a new id.
    let (_, book) = open(dir.path());
    let again = pending(&book, "/x").await;
    assert_eq!(again, "ap-3");
    let approvals = store
        .records_after(0, 100)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "approval")
        .count();
    assert_eq!(approvals, 1, "the answer is audited once");
}

#[tokio::test]
async fn an_answer_that_cannot_be_recorded_is_not_given() {
    let dir = tempfile::tempdir().unwrap();
    let (_, book) = open(dir.path());
    let id = pending(&book, "/x").await;
    // Another process closes it under our feet (e.g. a restored backup).
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let other = SqliteStore::open(&dir.path().join("warden.db"), key).unwrap();
    other
        .approval_answered(
            &ask("/x").with_id(&id),
            &ApprovalAnswer::AllowOnce,
            "admin",
            1,
        )
        .unwrap();
    assert!(matches!(
        book.answer(&id, ApprovalAnswer::AllowOnce),
        Err(warden_api::AnswerError::NotRecorded { .. })
    ));
}

trait WithId {
    fn with_id(self, id: &str) -> Self;
}

impl WithId for ApprovalRequest {
    fn with_id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }
}

/// Two hosts on one database (replicas, or `warden serve` beside
/// `warden call`): an answer given through either reaches the ask of the
/// other, and is used once in all.
#[tokio::test]
async fn an_answer_given_through_another_host_is_seen_and_used_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_, a) = open(dir.path());
    let (_, b) = open(dir.path());
    let id = pending(&a, "/x").await;
    // The person answers through host B, which never saw the ask.
    b.answer(&id, ApprovalAnswer::AllowOnce).unwrap();
    // The agent's retry lands on A: the answer is there.
    assert_eq!(a.ask(ask("/x")).await, ApprovalAnswer::AllowOnce);
    // A replay of the retry on B finds the answer used: it asks afresh.
    let replay = b.ask(ask("/x")).await;
    assert!(
        matches!(&replay, ApprovalAnswer::Pending { id: again } if *again != id),
        "an answer is used once across hosts: {replay:?}"
    );
}

/// Both hosts learned of the answer (it was given through B, and A
/// reloaded it): the first retry uses it, the second, on the other host,
/// gets nothing from it.
#[tokio::test]
async fn racing_retries_on_two_hosts_use_one_answer_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_, a) = open(dir.path());
    let (_, b) = open(dir.path());
    let id = pending(&a, "/x").await;
    b.answer(&id, ApprovalAnswer::AllowOnce).unwrap();
    // A restarted A also knows the answer from the ledger.
    drop(a);
    let (_, a) = open(dir.path());
    let first = b.ask(ask("/x")).await;
    let second = a.ask(ask("/x")).await;
    assert_eq!(first, ApprovalAnswer::AllowOnce);
    assert!(
        !matches!(second, ApprovalAnswer::AllowOnce),
        "the second retry must not run on the same answer: {second:?}"
    );
}

/// The ask and its answer happened on host B; the agent's retry lands on
/// host A, which never saw either: the answer is found there too.
#[tokio::test]
async fn a_retry_on_a_host_that_never_saw_the_ask_finds_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (_, a) = open(dir.path());
    let (_, b) = open(dir.path());
    let id = pending(&b, "/x").await;
    b.answer(&id, ApprovalAnswer::AllowOnce).unwrap();
    assert_eq!(a.ask(ask("/x")).await, ApprovalAnswer::AllowOnce);
    assert!(
        matches!(b.ask(ask("/x")).await, ApprovalAnswer::Pending { .. }),
        "used once"
    );
    // Still pending on B, the ask is not duplicated by a retry on A.
    let other = pending(&b, "/y").await;
    assert_eq!(pending(&a, "/y").await, other);
}
