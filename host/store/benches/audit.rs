//! Audit appends on a real database file (WAL), at both durabilities:
//!
//! - `append`: the latency of one `audit()` as its caller sees it, with
//!   1, 8 or 32 threads appending at once (divan's `threads`);
//! - `burst`: throughput, 512 appends per iteration spread over 1, 8 or
//!   32 appender threads (items/s is appends per second).
//!
//! - `postgres_burst`: the same on PostgreSQL (the test suite's loopback
//!   cluster, `scripts/ensure-postgres`), 1, 4 or 8 appender threads of
//!   one host sharing its chain;
//! - `postgres_replicas`: 1, 4 or 8 stores with keys of their own (as
//!   replicas are), each appending to its own chain from one thread;
//! - `postgres_answer_across_replicas`: an ask made on replica A and
//!   answered on replica B, from B's answer until A sees it (what an
//!   agent's retry on A reads before it runs).
//!
//! `cargo bench -p warden-store --bench audit`

#![allow(clippy::expect_used, reason = "a benchmark fails loudly")]

use std::sync::atomic::{AtomicU64, Ordering};

use warden_api::{ApprovalAnswer, ApprovalRequest, AuditEvent, OpenApproval};
use warden_store::{Durability, PgStore, SqliteStore, Store, host_key};

fn main() {
    divan::main();
}

const DURABILITIES: [Durability; 2] = [Durability::Full, Durability::Normal];
/// Appends per `burst` iteration, whatever the number of appenders.
const BURST: usize = 512;

fn event(n: u64) -> AuditEvent {
    AuditEvent::Decision {
        principal: None,
        agent: "bench".into(),
        session: "s".into(),
        request_id: format!("r{n}"),
        call: "fs_write(/workspace/notes.txt)".into(),
        decision: "allow".into(),
        reason: "`fs_write(/workspace/notes.txt)` is allowed by rule `fs_write(/workspace/**)`"
            .into(),
        rule: Some("fs_write(/workspace/**)".into()),
        layer: "rule".into(),
        grant: None,
        args_digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"
            .into(),
        args: None,
    }
}

fn store(dir: &tempfile::TempDir, durability: Durability) -> SqliteStore {
    let key = host_key(&dir.path().join("host.key")).expect("key");
    SqliteStore::open(&dir.path().join("warden.db"), key)
        .and_then(|s| s.with_durability(durability))
        .expect("store")
}

#[divan::bench(sample_count = 100, sample_size = 5, threads = [1, 8, 32], args = DURABILITIES)]
fn append(bencher: divan::Bencher, durability: Durability) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = store(&dir, durability);
    let n = AtomicU64::new(0);
    bencher
        .counter(divan::counter::ItemsCount::new(1usize))
        .bench(|| {
            let event = event(n.fetch_add(1, Ordering::Relaxed));
            store.append(&event).expect("append");
        });
}

#[divan::bench(sample_count = 20, sample_size = 1, consts = [1, 8, 32], args = DURABILITIES)]
fn burst<const APPENDERS: usize>(bencher: divan::Bencher, durability: Durability) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = store(&dir, durability);
    let n = AtomicU64::new(0);
    bencher
        .counter(divan::counter::ItemsCount::new(BURST))
        .bench_local(|| {
            std::thread::scope(|scope| {
                for _ in 0..APPENDERS {
                    scope.spawn(|| {
                        for _ in 0..BURST / APPENDERS {
                            let event = event(n.fetch_add(1, Ordering::Relaxed));
                            store.append(&event).expect("append");
                        }
                    });
                }
            });
        });
}

/// A new database in the loopback test cluster.
fn postgres_database() -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-postgres");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg("--database")
        .output()
        .expect("scripts/ensure-postgres");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("a URL")
        .trim()
        .to_owned()
}

fn postgres_store(dir: &tempfile::TempDir, url: &str, name: &str) -> PgStore {
    let key = host_key(&dir.path().join(format!("{name}.key"))).expect("key");
    PgStore::open(url, key).expect("store")
}

#[divan::bench(sample_count = 20, sample_size = 1, consts = [1, 4, 8])]
fn postgres_burst<const APPENDERS: usize>(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = postgres_store(&dir, &postgres_database(), "host");
    let n = AtomicU64::new(0);
    bencher
        .counter(divan::counter::ItemsCount::new(BURST))
        .bench_local(|| {
            std::thread::scope(|scope| {
                for _ in 0..APPENDERS {
                    scope.spawn(|| {
                        for _ in 0..BURST / APPENDERS {
                            let event = event(n.fetch_add(1, Ordering::Relaxed));
                            store.append(&event).expect("append");
                        }
                    });
                }
            });
        });
}

#[divan::bench(sample_count = 20, sample_size = 1, consts = [1, 4, 8])]
fn postgres_replicas<const REPLICAS: usize>(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = postgres_database();
    let stores: Vec<PgStore> = (0..REPLICAS)
        .map(|i| postgres_store(&dir, &url, &format!("replica-{i}")))
        .collect();
    let n = AtomicU64::new(0);
    bencher
        .counter(divan::counter::ItemsCount::new(BURST))
        .bench_local(|| {
            std::thread::scope(|scope| {
                for store in &stores {
                    let n = &n;
                    scope.spawn(move || {
                        for _ in 0..BURST / REPLICAS {
                            let event = event(n.fetch_add(1, Ordering::Relaxed));
                            store.append(&event).expect("append");
                        }
                    });
                }
            });
        });
}

fn approval(id: &str, n: u64) -> OpenApproval {
    OpenApproval {
        request: ApprovalRequest {
            id: id.into(),
            agent: "bench".into(),
            request_id: format!("r{n}"),
            tool: "fs_write".into(),
            call: "fs_write(/workspace/notes.txt)".into(),
            reason: "side effect".into(),
            suggested_rule: "fs_write(/workspace/**)".into(),
            args_fingerprint: format!("f{n}"),
            arguments: serde_json::Value::Null,
            always_offered: true,
        },
        key: format!("key-{n}"),
        asked_ms: n,
        answer: None,
    }
}

#[divan::bench(sample_count = 200, sample_size = 1)]
fn postgres_answer_across_replicas(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = postgres_database();
    let (a, b) = (
        postgres_store(&dir, &url, "replica-a"),
        postgres_store(&dir, &url, "replica-b"),
    );
    let n = AtomicU64::new(0);
    bencher
        .with_inputs(|| {
            let n = n.fetch_add(1, Ordering::Relaxed);
            let id = a.approval_asked(&approval("", n)).expect("ask on A");
            let mut asked = approval(&id, n);
            asked.request.id = id;
            asked
        })
        .bench_local_values(|asked| {
            b.approval_answered(&asked.request, &ApprovalAnswer::AllowOnce, "bench", 1)
                .expect("answer on B");
            let seen = a
                .open_approval(&asked.request.id)
                .expect("read on A")
                .expect("still open");
            assert!(seen.answer.is_some(), "A sees B's answer");
        });
}
