//! Crash safety of audit appends: a child process appending from eight
//! threads (so commits are shared) is killed with SIGKILL in the middle
//! of its burst, six times, alternating the durability. The child prints
//! each record's position only after `append` returned. After every kill
//! the database opens, the chain verifies with the host key (tags and
//! signatures, including the tagged tail the child had not signed yet),
//! every printed record is there, at its position, with its content, and
//! once the head is sealed the chain verifies with the public key alone;
//! the next child goes on appending to the same chain. Whether appenders
//! share a commit depends on the scheduler; the test runs extra rounds
//! (bounded) until some kill hit a chain grown by shared commits.
//!
//! A second test kills a child that reports each record once it is
//! durable, not committed (`append_durable` under "normal": the record
//! is in the pending log, committed later): every record it reported is
//! in the chain after the next open, exactly once, and the chain
//! verifies.
//!
//! The tests re-run their own binary as the child (an environment
//! variable says which role it plays).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use warden_api::AuditEvent;
use warden_store::{Durability, SqliteStore, host_key};

const ROLE: &str = "WARDEN_STORE_CRASH_CHILD";
const THREADS: u64 = 8;
const ROUNDS: u64 = 6;
/// Rounds run at most, should no round's appenders share a commit.
const MAX_ROUNDS: u64 = 3 * ROUNDS;

fn event(id: &str) -> AuditEvent {
    AuditEvent::Outcome {
        principal: None,
        agent: "crash".into(),
        session: "s".into(),
        request_id: id.to_owned(),
        tool: "fs_read".into(),
        ok: true,
        duration_us: 1,
        limit_hit: false,
        error_type: None,
        domain_code: None,
    }
}

fn open(dir: &Path, durability: Durability) -> SqliteStore {
    let key = host_key(&dir.join("host.key")).unwrap();
    SqliteStore::open(&dir.join("warden.db"), key)
        .and_then(|s| s.with_durability(durability))
        .unwrap()
}

/// The child: appends until killed (or, should the parent never kill it,
/// until a bound), printing `id seq` for each append that returned.
fn child(dir: &Path, round: &str) {
    let durability = if round.parse::<u64>().unwrap() % 2 == 0 {
        Durability::Normal
    } else {
        Durability::Full
    };
    let store = open(dir, durability);
    // All threads start appending together, so their appends overlap.
    let start = std::sync::Barrier::new(THREADS as usize);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (store, start) = (&store, &start);
            scope.spawn(move || {
                start.wait();
                for i in 0..50_000 {
                    let id = format!("r{round}-{t}-{i}");
                    let seq = store.append(&event(&id)).unwrap();
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "{id} {seq}").unwrap();
                    out.flush().unwrap();
                }
            });
        }
    });
}

/// Kills the child when the parent fails before it does.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// This binary run again as the child of `test`, for `round`.
fn spawn(test: &str, dir: &Path, round: u64) -> Killed {
    Killed(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--test-threads=1"])
            .env(ROLE, dir)
            .env("ROUND", round.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn a_killed_appender_loses_no_returned_record_and_its_chain_verifies() {
    if let (Some(dir), Ok(round)) = (std::env::var_os(ROLE), std::env::var("ROUND")) {
        child(Path::new(&dir), &round);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = host_key(&dir.path().join("host.key")).unwrap();
    // Every record whose append returned in some child: id -> position.
    let mut returned: BTreeMap<String, u64> = BTreeMap::new();
    // The chain's counts after the previous round, and whether some
    // round's appenders shared commits.
    let (mut tags_before, mut records_before) = (0, 0);
    let mut shared = false;
    let mut round = 0;
    while round < ROUNDS || (!shared && round < MAX_ROUNDS) {
        let mut child = spawn(
            "a_killed_appender_loses_no_returned_record_and_its_chain_verifies",
            dir.path(),
            round,
        );
        let stdout = child.0.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut seen = 0;
        let kill_after = 300 + round * 200;
        let mut record = |line: String| {
            // The harness prints its own lines too; ours are `id seq`.
            if let Some((id, seq)) = line.split_once(' ')
                && id.starts_with('r')
                && let Ok(seq) = seq.parse::<u64>()
            {
                returned.insert(id.to_owned(), seq);
                return true;
            }
            false
        };
        for line in lines.by_ref() {
            if record(line.unwrap()) {
                seen += 1;
                if seen == kill_after {
                    break;
                }
            }
        }
        child.0.kill().unwrap();
        let status = child.0.wait().unwrap();
        // What it printed before it died was returned, too.
        for line in lines {
            record(line.unwrap());
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                status.signal(),
                Some(9),
                "round {round}: killed mid-burst, not finished: {status}"
            );
        }

        let store = open(dir.path(), Durability::Normal);
        let verified = store.verify_with_host_key(&key).unwrap();
        let verified = verified.unwrap_or_else(|b| panic!("round {round}: {b}"));
        let stored: BTreeMap<String, u64> = store
            .records_after(0, u64::MAX)
            .unwrap()
            .into_iter()
            .map(|r| (r.event["request_id"].as_str().unwrap().to_owned(), r.seq))
            .collect();
        let lost: Vec<_> = returned
            .iter()
            .filter(|(id, seq)| stored.get(*id) != Some(seq))
            .take(5)
            .collect();
        assert!(
            lost.is_empty(),
            "round {round}: returned but not stored at that position: {lost:?}"
        );
        assert!(verified.records >= returned.len() as u64);
        // Eight threads appending for hundreds of records usually share
        // commits (the writer's own tests show batching deterministically);
        // this round's records came in fewer commits when they did. Judged
        // on "full" rounds: under "normal" the open after the kill commits
        // what the child left pending in one commit of its own.
        if round % 2 == 1 {
            shared |= verified.tags - tags_before < verified.records - records_before;
        }
        (tags_before, records_before) = (verified.tags, verified.records);
        // Signatures only at checkpoints, far fewer than commits.
        assert!(
            verified.signatures < verified.tags,
            "round {round}: {} signatures for {} commits",
            verified.signatures,
            verified.tags
        );
        // The killed child's tail since its last checkpoint is tagged,
        // not signed; sealing signs it, and then the public key alone
        // verifies the whole chain.
        store.seal().unwrap();
        let public = store.verify(&key.public()).unwrap();
        let public = public.unwrap_or_else(|b| panic!("round {round}, public key: {b}"));
        assert_eq!(public.records, verified.records);
        assert_eq!(public.signed_through, verified.records);
        round += 1;
    }
    assert!(
        shared,
        "in {round} rounds of {THREADS} appenders, no commit held two records"
    );
}

/// The child of the second test: appends with `append_durable` from
/// eight threads, a ninth committing every two milliseconds, printing
/// `id` for each record reported durable.
fn durable_child(dir: &Path, round: &str) {
    let store = open(dir, Durability::Normal);
    let start = std::sync::Barrier::new(THREADS as usize);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(2));
                pollster(store.flush_appends()).unwrap();
            }
        });
        for t in 0..THREADS {
            let (store, start) = (&store, &start);
            scope.spawn(move || {
                start.wait();
                for i in 0..50_000 {
                    let id = format!("d{round}-{t}-{i}");
                    pollster(store.append_durable(&event(&id))).unwrap();
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "{id}").unwrap();
                    out.flush().unwrap();
                }
            });
        }
    });
}

/// Runs `future` to its end on this thread.
fn pollster<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn a_killed_host_loses_no_record_it_reported_durable_and_commits_none_twice() {
    if let (Some(dir), Ok(round)) = (std::env::var_os(ROLE), std::env::var("ROUND")) {
        durable_child(Path::new(&dir), &round);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let mut reported: Vec<String> = Vec::new();
    for round in 0..3u64 {
        let mut child = spawn(
            "a_killed_host_loses_no_record_it_reported_durable_and_commits_none_twice",
            dir.path(),
            round,
        );
        let stdout = child.0.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let ours = |line: &str| line.starts_with('d') && !line.contains(' ');
        let kill_after = 500 + round as usize * 300;
        let mut seen = 0;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if ours(&line) {
                reported.push(line);
                seen += 1;
                if seen == kill_after {
                    break;
                }
            }
        }
        child.0.kill().unwrap();
        child.0.wait().unwrap();
        for line in lines {
            let line = line.unwrap();
            if ours(&line) {
                reported.push(line);
            }
        }

        let store = open(dir.path(), Durability::Normal);
        let verified = store.verify_with_host_key(&key).unwrap();
        verified.unwrap_or_else(|b| panic!("round {round}: {b}"));
        let mut stored: BTreeMap<String, usize> = BTreeMap::new();
        for record in store.records_after(0, u64::MAX).unwrap() {
            let id = record.event["request_id"].as_str().unwrap().to_owned();
            *stored.entry(id).or_default() += 1;
        }
        let twice: Vec<_> = stored.iter().filter(|(_, n)| **n > 1).take(5).collect();
        assert!(
            twice.is_empty(),
            "round {round}: committed twice: {twice:?}"
        );
        let lost: Vec<_> = reported
            .iter()
            .filter(|id| !stored.contains_key(*id))
            .take(5)
            .collect();
        assert!(
            lost.is_empty(),
            "round {round}: reported durable but not in the chain: {lost:?}"
        );
    }
}
