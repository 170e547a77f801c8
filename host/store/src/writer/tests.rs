//! Group commit: records queued behind a running commit share the next
//! one; a caller returns only once its record is committed; a failed
//! commit fails every caller in it and nothing else.

use std::collections::BTreeSet;

use crate::tests::{key, open, outcome, raw};
use crate::{SqliteStore, StoreError};

/// Waits (for a state, not a time) until the queue is `(queued, writing)`.
fn wait_for(store: &SqliteStore, queued: usize, writing: bool) {
    let start = std::time::Instant::now();
    while store.group.queued() != (queued, writing) {
        assert!(
            start.elapsed().as_secs() < 120,
            "the appenders never got there (a hang, not a speed check)"
        );
        std::thread::yield_now();
    }
}

/// Appends `outcome(1)` alone, then `outcome(2..=n)` queued behind its
/// commit (the test holds the connection until all are queued); returns
/// each appender's result, in order.
fn two_commits(store: &SqliteStore, n: u64) -> Vec<Result<u64, StoreError>> {
    std::thread::scope(|scope| {
        let held = store.conn();
        let first = scope.spawn(|| store.append(&outcome(1)));
        // The first appender is the writer, blocked on the connection.
        wait_for(store, 0, true);
        let rest: Vec<_> = (2..=n)
            .map(|i| scope.spawn(move || store.append(&outcome(i))))
            .collect();
        wait_for(store, (n - 1) as usize, true);
        drop(held);
        std::iter::once(first)
            .chain(rest)
            .map(|h| h.join().unwrap())
            .collect()
    })
}

/// The chain checked with the host key, which must hold.
fn verified(store: &SqliteStore, dir: &std::path::Path) -> crate::Verified {
    store.verify_with_host_key(&key(dir)).unwrap().unwrap()
}

/// A runtime with two workers, as on the 2-core machines Warden targets.
fn two_workers() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

fn request_id(store: &SqliteStore, seq: u64) -> String {
    let record = store.records_after(seq - 1, 1).unwrap();
    record[0].event["request_id"].as_str().unwrap().to_owned()
}

#[test]
fn records_queued_behind_a_commit_share_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let results = two_commits(&store, 6);
    let seqs: Vec<u64> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(seqs[0], 1, "the first appender commits alone, at once");
    assert_eq!(
        seqs.iter().copied().collect::<BTreeSet<_>>(),
        (1..=6).collect(),
        "each caller gets its own position"
    );
    for (i, seq) in seqs.iter().enumerate() {
        assert_eq!(request_id(&store, *seq), format!("r{}", i + 1));
    }
    let verified = verified(&store, dir.path());
    assert_eq!(
        (verified.records, verified.tags),
        (6, 2),
        "the five queued records share one commit and one tag"
    );
}

#[test]
fn a_failed_commit_fails_every_caller_in_it_and_only_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // The disk refuses record r3 (as a full disk would refuse a batch).
    raw(dir.path())
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON audit \
             WHEN NEW.body LIKE '%\"request_id\":\"r3\"%' \
             BEGIN SELECT RAISE(ABORT, 'disk says no'); END;",
        )
        .unwrap();
    let results = two_commits(&store, 4);
    assert_eq!(results[0].as_ref().unwrap(), &1);
    for result in &results[1..] {
        let err = result.as_ref().unwrap_err();
        assert!(matches!(err, StoreError::AuditCommit { .. }), "{err}");
        assert!(err.to_string().contains("disk says no"), "{err}");
    }
    // Nothing of the failed commit is on record, and the chain goes on.
    assert_eq!(store.append(&outcome(5)).unwrap(), 2);
    assert_eq!(request_id(&store, 2), "r5");
    let verified = verified(&store, dir.path());
    assert_eq!((verified.records, verified.tags), (2, 2));
}

#[test]
fn a_returned_audit_is_committed_and_signed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.append(&outcome(1)).unwrap();
    // Another connection (another process) sees it at once.
    let (count, signature): (i64, String) = raw(dir.path())
        .query_row("SELECT count(*), max(signature) FROM audit", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(count, 1);
    assert_eq!(signature.len(), 128);
}

#[test]
fn many_concurrent_appenders_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let seqs: Vec<(u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16u64)
            .map(|t| {
                let store = &store;
                scope.spawn(move || {
                    (0..40u64)
                        .map(|i| {
                            let n = t * 1000 + i;
                            (n, store.append(&outcome(n)).unwrap())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(seqs.len(), 640);
    for (n, seq) in &seqs {
        assert_eq!(request_id(&store, *seq), format!("r{n}"));
    }
    let verified = verified(&store, dir.path());
    assert_eq!(verified.records, 640);
}

/// On a runtime with two workers, one caller writes (held up here by the
/// test holding the connection) while fifteen more queue behind it: a
/// waiting caller holds no worker, so the other worker runs them all.
/// Callers blocking their worker while they wait would stop at two, and
/// batches could never outgrow the runtime's threads.
#[test]
fn callers_waiting_for_a_commit_hold_no_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(open(dir.path()));
    let runtime = two_workers();
    let held = store.conn();
    let spawn = |i: u64| {
        let store = std::sync::Arc::clone(&store);
        runtime.spawn(async move { store.append_async(&outcome(i)).await })
    };
    // The first caller is the writer, blocked on the connection.
    let mut tasks = vec![spawn(1)];
    wait_for(&store, 0, true);
    tasks.extend((2..=16).map(spawn));
    wait_for(&store, 15, true);
    drop(held);
    let seqs: BTreeSet<u64> = runtime.block_on(async {
        let mut seqs = BTreeSet::new();
        for task in tasks {
            seqs.insert(task.await.unwrap().unwrap());
        }
        seqs
    });
    assert_eq!(seqs, (1..=16).collect());
    let verified = verified(&store, dir.path());
    assert_eq!(
        (verified.records, verified.tags),
        (16, 2),
        "the fifteen queued records share one commit"
    );
}

/// A caller whose call is dropped while it waits (a cancelled call) takes
/// nobody's turn: the records queued with it are still written, and the
/// callers behind it still return.
#[test]
fn a_caller_dropped_while_it_waits_strands_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(open(dir.path()));
    let runtime = two_workers();
    let held = store.conn();
    let spawn = |i: u64| {
        let store = std::sync::Arc::clone(&store);
        runtime.spawn(async move { store.append_async(&outcome(i)).await })
    };
    let writer = spawn(1);
    wait_for(&store, 0, true);
    let dropped = spawn(2);
    wait_for(&store, 1, true);
    let rest: Vec<_> = (3..=5).map(spawn).collect();
    wait_for(&store, 4, true);
    dropped.abort();
    runtime.block_on(async {
        let _ = (&mut { dropped }).await;
    });
    drop(held);
    let seqs: BTreeSet<u64> = runtime.block_on(async {
        let mut seqs = BTreeSet::from([writer.await.unwrap().unwrap()]);
        for task in rest {
            seqs.insert(task.await.unwrap().unwrap());
        }
        seqs
    });
    assert_eq!(seqs.len(), 4);
    let verified = verified(&store, dir.path());
    assert_eq!(
        verified.records, 5,
        "the dropped caller's record is on record too"
    );
}

/// The rows of the audit table as another process sees them: request id
/// and whether the row carries its commit's tag.
fn committed(dir: &std::path::Path) -> Vec<(String, bool)> {
    let conn = raw(dir);
    let mut stmt = conn
        .prepare("SELECT body, tag FROM audit ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| {
        let body: String = r.get(0)?;
        let tag: String = r.get(1)?;
        Ok((body, !tag.is_empty()))
    })
    .unwrap()
    .map(|row| {
        let (body, tagged) = row.unwrap();
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        (body["request_id"].as_str().unwrap().to_owned(), tagged)
    })
    .collect()
}

#[test]
fn a_record_nobody_waits_for_rides_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Only the first record queued asks for a flush: one is then due.
    assert!(store.append_later(&outcome(1)).unwrap());
    assert!(!store.append_later(&outcome(2)).unwrap());
    assert!(committed(dir.path()).is_empty(), "nothing committed yet");
    // A waiting append takes them along: one commit, one tag, in order.
    assert_eq!(store.append(&outcome(3)).unwrap(), 3);
    assert_eq!(
        committed(dir.path()),
        [
            ("r1".into(), false),
            ("r2".into(), false),
            ("r3".into(), true)
        ]
    );
    // The flush arranged for them finds nothing left, and is no longer due.
    crate::writer::block_on(store.flush_appends()).unwrap();
    assert!(store.append_later(&outcome(4)).unwrap());
    crate::writer::block_on(store.flush_appends()).unwrap();
    assert_eq!(committed(dir.path()).len(), 4);
    let verified = verified(&store, dir.path());
    assert_eq!((verified.records, verified.tags), (4, 2));
}

#[test]
fn queued_records_are_read_sealed_and_kept_when_the_store_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Reading the log commits what was queued before the read.
    store.append_later(&outcome(1)).unwrap();
    assert_eq!(request_id(&store, 1), "r1");
    // Sealing signs a head that includes what was queued.
    store.append_later(&outcome(2)).unwrap();
    assert_eq!(store.seal().unwrap(), Some(2));
    // A store dropped with records queued commits them first.
    store.append_later(&outcome(3)).unwrap();
    drop(store);
    assert_eq!(committed(dir.path()).last().unwrap().0, "r3");
    let store = open(dir.path());
    assert_eq!(verified(&store, dir.path()).records, 3);
}

#[test]
fn a_flush_waits_for_a_running_commit_to_hand_over() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    std::thread::scope(|scope| {
        let held = store.conn();
        let first = scope.spawn(|| store.append(&outcome(1)));
        wait_for(&store, 0, true);
        // Queued behind the running commit, with nobody waiting for it.
        store.append_later(&outcome(2)).unwrap();
        let flush = scope.spawn(|| crate::writer::block_on(store.flush_appends()));
        drop(held);
        assert_eq!(first.join().unwrap().unwrap(), 1);
        flush.join().unwrap().unwrap();
    });
    assert_eq!(
        committed(dir.path()),
        [("r1".into(), true), ("r2".into(), true)],
        "the flush committed the queued record in a commit of its own"
    );
}
