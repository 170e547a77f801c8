//! The toolsmith's gap log: recording one unfulfilled request and the
//! recurrence check that comes with it (one transaction), on a real
//! database file whose ring is full, at the default durability
//! (`normal`): 4,096 rows over 64 signatures, and 4,096 rows of one
//! session repeating one missing tool (which never recurs, so each of its
//! requests checks again).
//!
//! `cargo bench -p warden-store --bench gaps`

#![allow(clippy::expect_used, reason = "a benchmark fails loudly")]

use std::sync::atomic::{AtomicU64, Ordering};

use warden_store::{Durability, GapRule, NewGap, SqliteStore, Store, host_key};

fn main() {
    divan::main();
}

const RULE: GapRule = GapRule {
    capacity: 4096,
    threshold: 3,
    window_ms: 24 * 60 * 60 * 1000,
    min_sessions: 2,
};

fn gap(n: u64) -> NewGap {
    NewGap {
        signature: format!("domain{}:action", n % 64),
        agent: "bench".into(),
        session: format!("s{}", n % 7),
        asked: format!("domain{}_action", n % 64),
        at_ms: 1_000_000 + n,
    }
}

fn looping(n: u64) -> NewGap {
    NewGap {
        signature: "domain:action".into(),
        session: "s0".into(),
        ..gap(n)
    }
}

#[divan::bench(sample_count = 200, sample_size = 5)]
fn record_and_tally(bencher: divan::Bencher) {
    bench_full_ring(bencher, gap);
}

#[divan::bench(sample_count = 200, sample_size = 5)]
fn record_one_session_looping(bencher: divan::Bencher) {
    bench_full_ring(bencher, looping);
}

fn bench_full_ring(bencher: divan::Bencher, gap: fn(u64) -> NewGap) {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = host_key(&dir.path().join("host.key")).expect("key");
    let store = SqliteStore::open(&dir.path().join("warden.db"), key)
        .and_then(|s| s.with_durability(Durability::Normal))
        .expect("store");
    for n in 0..RULE.capacity {
        store.record_gap(&gap(n), &RULE).expect("gap");
    }
    let n = AtomicU64::new(RULE.capacity);
    bencher.bench(|| {
        store
            .record_gap(&gap(n.fetch_add(1, Ordering::Relaxed)), &RULE)
            .expect("gap")
    });
}
