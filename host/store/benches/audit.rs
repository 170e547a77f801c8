//! Audit appends per second: one signed, hash-chained record per
//! transaction on a real database file (WAL), at both durabilities.

#![allow(clippy::expect_used, reason = "a benchmark fails loudly")]

use warden_api::AuditEvent;
use warden_store::{Durability, Store, host_key};

fn main() {
    divan::main();
}

fn event(n: u64) -> AuditEvent {
    AuditEvent::Decision {
        agent: "bench".into(),
        session: "s".into(),
        request_id: format!("r{n}"),
        call: "fs.write(/workspace/notes.txt)".into(),
        decision: "allow".into(),
        reason: "`fs.write(/workspace/notes.txt)` is allowed by rule `fs.write(/workspace/**)`"
            .into(),
        rule: Some("fs.write(/workspace/**)".into()),
        layer: "rule".into(),
        grant: None,
        args_digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"
            .into(),
        args: None,
    }
}

#[divan::bench(sample_count = 200, sample_size = 5, args = [Durability::Full, Durability::Normal])]
fn append(bencher: divan::Bencher, durability: Durability) {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = host_key(&dir.path().join("host.key")).expect("key");
    let store = Store::open(&dir.path().join("warden.db"), key)
        .and_then(|s| s.with_durability(durability))
        .expect("store");
    let mut n = 0;
    bencher
        .counter(divan::counter::ItemsCount::new(1usize))
        .bench_local(|| {
            n += 1;
            store.append(&event(n)).expect("append")
        });
}
