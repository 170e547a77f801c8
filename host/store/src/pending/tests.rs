use std::path::{Path, PathBuf};

use crate::tests::{key, outcome};
use crate::{Durability, SqliteStore};

fn normal(dir: &Path) -> SqliteStore {
    SqliteStore::open(&dir.join("warden.db"), key(dir))
        .and_then(|s| s.with_durability(Durability::Normal))
        .unwrap()
}

fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(super::dir_for(&dir.join("warden.db"))) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = listing
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    found.sort();
    found
}

/// The request ids in the chain, in order.
fn ids(store: &SqliteStore) -> Vec<String> {
    store
        .records_after(0, u64::MAX)
        .unwrap()
        .into_iter()
        .map(|r| r.event["request_id"].as_str().unwrap().to_owned())
        .collect()
}

fn verifies(dir: &Path, store: &SqliteStore) {
    let verified = store.verify_with_host_key(&key(dir)).unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

#[test]
fn records_queued_by_a_killed_host_join_the_chain_at_the_next_open_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    for n in 1..=3 {
        assert_eq!(store.append_later(&outcome(n)).unwrap(), n == 1);
    }
    // Committed, and the commit records how far into the file it reached.
    crate::writer::block_on(store.flush_appends()).unwrap();
    for n in 4..=6 {
        store.append_later(&outcome(n)).unwrap();
    }
    store.killed();
    assert_eq!(files(dir.path(), "log").len(), 1);

    let store = normal(dir.path());
    assert_eq!(ids(&store), ["r1", "r2", "r3", "r4", "r5", "r6"]);
    verifies(dir.path(), &store);
    // The recovered file is gone; only the new host's own remains.
    assert_eq!(files(dir.path(), "log").len(), 1);
    drop(store);
    assert!(files(dir.path(), "log").is_empty());
    let store = normal(dir.path());
    assert_eq!(ids(&store).len(), 6, "nothing is committed twice");
}

#[test]
fn a_host_that_stops_commits_its_pending_records_and_removes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    store.append_later(&outcome(1)).unwrap();
    crate::writer::block_on(store.append_durable(&outcome(2))).unwrap();
    drop(store);
    assert!(files(dir.path(), "log").is_empty());
    let rows: i64 = crate::tests::raw(dir.path())
        .query_row("SELECT count(*) FROM audit_pending", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
    let store = normal(dir.path());
    assert_eq!(ids(&store), ["r1", "r2"]);
}

#[test]
fn a_live_hosts_file_is_left_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let first = normal(dir.path());
    first.append_later(&outcome(1)).unwrap();
    // A second opener (`warden audit verify`, another command) must not
    // commit what the live host will commit itself.
    let second = normal(dir.path());
    assert!(ids(&second).is_empty());
    crate::writer::block_on(first.flush_appends()).unwrap();
    assert_eq!(ids(&second), ["r1"]);
}

#[test]
fn under_full_durability_records_are_committed_not_kept_pending() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("warden.db"), key(dir.path()))
        .and_then(|s| s.with_durability(Durability::Full))
        .unwrap();
    assert!(!crate::writer::block_on(store.append_durable(&outcome(1))).unwrap());
    assert!(files(dir.path(), "log").is_empty());
    assert_eq!(ids(&store), ["r1"]);
}

#[test]
fn a_frame_cut_short_by_the_kill_is_dropped_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    store.append_later(&outcome(1)).unwrap();
    store.append_later(&outcome(2)).unwrap();
    store.killed();
    let file = files(dir.path(), "log").remove(0);
    let whole = std::fs::read(&file).unwrap();
    // The second frame's write never finished.
    std::fs::write(&file, &whole[..whole.len() - 7]).unwrap();
    let store = normal(dir.path());
    assert_eq!(ids(&store), ["r1"]);
    verifies(dir.path(), &store);
    assert!(files(dir.path(), "rejected").is_empty());
}

#[test]
fn an_edited_frame_is_not_committed_and_its_file_is_kept_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    for n in 1..=3 {
        store.append_later(&outcome(n)).unwrap();
    }
    store.killed();
    let file = files(dir.path(), "log").remove(0);
    let mut bytes = std::fs::read(&file).unwrap();
    // The attacker turns the second record's outcome around.
    let at = bytes
        .windows(9)
        .enumerate()
        .filter(|(_, w)| *w == b"\"ok\":true")
        .map(|(i, _)| i)
        .nth(1)
        .unwrap();
    bytes[at + 5..at + 9].copy_from_slice(b"fals");
    std::fs::write(&file, &bytes).unwrap();
    let store = normal(dir.path());
    assert_eq!(ids(&store), ["r1"], "only the frames before the edit");
    verifies(dir.path(), &store);
    assert_eq!(
        files(dir.path(), "rejected").len(),
        1,
        "kept for the operator"
    );
}

#[test]
fn a_file_planted_without_the_host_key_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A file of frames made under another key, and a host's own frames
    // renamed (the HMAC covers the file's name): neither is the host's.
    let other = tempfile::tempdir().unwrap();
    let planter = normal(other.path());
    planter.append_later(&outcome(66)).unwrap();
    planter.killed();
    let forged = files(other.path(), "log").remove(0);
    let store = normal(dir.path());
    store.append_later(&outcome(1)).unwrap();
    store.killed();
    let own = files(dir.path(), "log").remove(0);
    let pending = super::dir_for(&dir.path().join("warden.db"));
    std::fs::copy(&forged, pending.join(forged.file_name().unwrap())).unwrap();
    std::fs::rename(&own, pending.join("1-2-3.log")).unwrap();

    let store = normal(dir.path());
    assert!(ids(&store).is_empty());
    assert_eq!(files(dir.path(), "rejected").len(), 2);
}

#[test]
fn a_large_file_is_replaced_once_its_records_are_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    let first = files(dir.path(), "log");
    let mut n = 0;
    while files(dir.path(), "log") == first {
        n += 1;
        assert!(n < 20_000, "never replaced");
        store.append_later(&outcome(n)).unwrap();
        if n % 100 == 0 {
            crate::writer::block_on(store.flush_appends()).unwrap();
        }
    }
    assert_eq!(files(dir.path(), "log").len(), 1);
    let rows: i64 = crate::tests::raw(dir.path())
        .query_row("SELECT count(*) FROM audit_pending", [], |r| r.get(0))
        .unwrap();
    assert!(rows <= 1, "the replaced file's row is forgotten");
    store.append_later(&outcome(n + 1)).unwrap();
    store.killed();
    let store = normal(dir.path());
    assert_eq!(ids(&store).len() as u64, n + 1);
    verifies(dir.path(), &store);
}

#[test]
fn a_checkpoint_retires_the_pending_log_and_later_appends_commit_directly() {
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    store.append_later(&outcome(1)).unwrap();
    store.checkpoint().unwrap();
    assert!(files(dir.path(), "log").is_empty());
    assert_eq!(ids(&store), ["r1"]);
    // A call that ends after the host began to stop is still recorded.
    assert!(!crate::writer::block_on(store.append_durable(&outcome(2))).unwrap());
    store.killed();
    let store = normal(dir.path());
    assert_eq!(ids(&store), ["r1", "r2"]);
}

#[test]
fn a_file_its_host_never_finished_making_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    drop(normal(dir.path()));
    let pending = super::dir_for(&dir.path().join("warden.db"));
    std::fs::write(pending.join("1-2-3.new"), b"").unwrap();
    let store = normal(dir.path());
    assert!(files(dir.path(), "new").is_empty());
    // A live host's file in the making is left to it.
    let making = std::fs::File::create(pending.join("4-5-6.new")).unwrap();
    making.try_lock().unwrap();
    drop(normal(dir.path()));
    assert_eq!(files(dir.path(), "new").len(), 1);
    drop(store);
}

/// A write to the pending file that fails halfway, and whose cut back
/// fails too, leaves part of a frame in the file. Were anything written
/// after it, a frame would no longer sit at the offset its tag covers:
/// the next open would set the file aside, and with it every record after
/// the tear that the host had reported durable.
#[test]
fn records_after_a_torn_frame_that_could_not_be_cut_back_are_not_lost() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let store = normal(dir.path());
    assert!(crate::writer::block_on(store.append_durable(&outcome(1))).unwrap());
    let path = files(dir.path(), "log").remove(0);
    // The file system takes part of the next frame, then fails the write
    // and the cut back: the store's handle writes and truncates nothing.
    let writable = store
        .with_pending_log(|log| {
            let read_only = std::fs::File::open(&log.path).unwrap();
            std::mem::replace(&mut log.file, read_only)
        })
        .unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&[7; 20])
        .unwrap();
    assert!(crate::writer::block_on(store.append_durable(&outcome(2))).is_err());
    // The file system recovers.
    store.with_pending_log(|log| {
        if log.path == path {
            log.file = writable;
        }
    });
    crate::writer::block_on(store.append_durable(&outcome(3))).unwrap();
    store.append_later(&outcome(4)).unwrap();
    store.killed();

    let store = normal(dir.path());
    assert_eq!(ids(&store), ["r1", "r3", "r4"]);
    verifies(dir.path(), &store);
    assert!(files(dir.path(), "rejected").is_empty());
}
