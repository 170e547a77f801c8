//! Crash safety of the durable state: `warden serve` is killed with
//! SIGKILL, repeatedly, in the middle of a burst of calls, approvals and
//! grants. After every restart, everything the host reported done is
//! there — answered approvals (the retried call runs), issued grants
//! (they still allow calls), the decision record of every call it
//! answered, the outcome record of every call answered longer than the
//! outcome linger before the kill — and the audit chain verifies with the
//! host key (the killed host's tagged tail included). A host that then
//! stops cleanly records every outcome and signs the head, and the public
//! key alone verifies the whole chain.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

mod support;

use support::{Server, approval_id, setup, text, warden};

#[test]
fn a_killed_host_keeps_everything_it_reported_done() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(dir.path(), "");

    let mut answered: Vec<(u64, String)> = Vec::new();
    let mut grants = BTreeSet::new();
    // Calls the host answered after running them, and calls it answered
    // with a refusal or a pending approval.
    let mut reported = BTreeSet::new();
    let mut decided = BTreeSet::new();
    // Calls that ran and were answered long (a CLI command or more)
    // before the kill: their outcomes are committed by then, even with
    // no other call to ride along with.
    let mut settled = BTreeSet::new();
    for round in 0..5u64 {
        let mut server = Server::start(&config, &state);
        let base = (round + 1) * 1000;
        // The approval answered before the last kill: its retry runs now.
        if let Some((prev, id)) = answered.last() {
            server.call(
                base,
                "fs_write",
                json!({"path": format!("asked-{prev}.txt"), "content": "x"}),
            );
            let v = server.response(base);
            assert!(
                v["result"]["isError"] != true,
                "round {round}: the answer to {id} survived the kill: {v}"
            );
            reported.insert(base.to_string());
            settled.insert(base.to_string());
        }
        // Every grant issued so far still allows writes under its path.
        server.call(
            base + 1,
            "fs_write",
            json!({"path": "granted/x.txt", "content": "x"}),
        );
        let v = server.response(base + 1);
        assert_eq!(
            v["result"]["isError"] == true,
            grants.is_empty(),
            "round {round}: grants {grants:?}: {v}"
        );
        if grants.is_empty() {
            decided.insert((base + 1).to_string());
        } else {
            reported.insert((base + 1).to_string());
            settled.insert((base + 1).to_string());
        }

        // A new ask, answered by a person through the admin socket.
        server.call(
            base + 2,
            "fs_write",
            json!({"path": format!("asked-{round}.txt"), "content": "x"}),
        );
        let pending = server.response(base + 2);
        assert!(
            text(&pending).contains("approval_pending") || text(&pending).contains("waiting"),
            "{pending}"
        );
        decided.insert((base + 2).to_string());
        let id = approval_id(&pending);
        warden(&["approvals", "approve", &id], &state);
        answered.push((round, id));
        let grant = warden(
            &[
                "grants",
                "issue",
                "--agent",
                "alice",
                "--capability",
                "tool:fs_write",
                "--goal",
                "crash test",
                "--ttl",
                "3600",
                "--path",
                "/workspace/granted",
                "--actor",
                "crash-tester",
                "--confirm",
                "--reason",
                "grants survive a crash",
            ],
            &state,
        );
        grants.insert(grant["id"].as_str().unwrap().to_owned());

        // A burst of calls; the host is killed after a few answers, with
        // the rest in flight.
        for i in 0..30 {
            let (tool, args) = if i % 2 == 0 {
                ("fs_read", json!({"path": "hello.txt"}))
            } else {
                (
                    "fs_write",
                    json!({"path": format!("granted/{round}-{i}.txt"), "content": "x"}),
                )
            };
            server.call(base + 10 + i, tool, args);
        }
        for _ in 0..(3 + round * 4) {
            let v = server.next();
            assert!(v["result"]["isError"] != true, "{v}");
            reported.insert(v["id"].to_string());
        }
        server.kill();

        let verified = warden(&["audit", "verify"], &state);
        assert_eq!(verified["ok"], true, "round {round}: {verified}");
        // With the public key alone, at most the tail since the killed
        // host's last checkpoint is unverifiable (unsigned), nothing else.
        let public = public_key(dir.path(), &verified);
        let (ok, out) = verify_public(&state, &public);
        assert!(
            ok || out["break"]["problem"] == "unsigned",
            "round {round}: {out}"
        );
        let records = warden(&["audit", "export", "--json"], &state);
        let of_kind = |kind: &str| request_ids(&records, kind);
        let (decisions, outcomes) = (of_kind("decision"), of_kind("outcome"));
        let missing: Vec<_> = settled.difference(&outcomes).collect();
        assert!(
            missing.is_empty(),
            "round {round}: calls answered before the burst have no outcome: {missing:?}"
        );
        let stray: Vec<_> = outcomes.difference(&decisions).collect();
        assert!(
            stray.is_empty(),
            "round {round}: outcomes of calls never decided: {stray:?}"
        );
        let missing: Vec<_> = reported
            .union(&decided)
            .filter(|id| !decisions.contains(*id))
            .collect();
        assert!(
            missing.is_empty(),
            "round {round}: decisions not audited: {missing:?}"
        );
        let approvals = records
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["kind"] == "approval")
            .count();
        assert!(
            approvals >= answered.len(),
            "round {round}: every answer is audited"
        );
        let listed = warden(&["grants", "list"], &state);
        let listed: BTreeSet<String> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(listed, grants, "round {round}");
    }

    // A host that stops cleanly signs its head: the public key alone then
    // verifies everything, the killed hosts' tagged tails included.
    // Its last burst's outcomes, queued when it stops, are all recorded.
    let mut server = Server::start(&config, &state);
    let last: Vec<u64> = (9000..9020).collect();
    for id in &last {
        server.call(*id, "fs_read", json!({"path": "hello.txt"}));
    }
    for _ in &last {
        let v = server.next();
        assert!(v["result"]["isError"] != true, "{v}");
    }
    let status = server.close(Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let records = warden(&["audit", "export", "--json"], &state);
    let outcomes = request_ids(&records, "outcome");
    let missing: Vec<_> = last
        .iter()
        .filter(|id| !outcomes.contains(&id.to_string()))
        .collect();
    assert!(
        missing.is_empty(),
        "outcomes lost at a clean stop: {missing:?}"
    );
    let verified = warden(&["audit", "verify"], &state);
    let (ok, sealed) = verify_public(&state, &public_key(dir.path(), &verified));
    assert!(ok, "{sealed}");
    assert_eq!(sealed["signed-through"], verified["records"], "{sealed}");
}

/// The request ids of the exported audit records of `kind`.
fn request_ids(records: &Value, kind: &str) -> BTreeSet<String> {
    records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == kind)
        .map(|r| r["event"]["request_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The host's public key, as `warden audit verify` printed it, in a file.
fn public_key(dir: &Path, verified: &Value) -> PathBuf {
    let path = dir.join("host.pub");
    std::fs::write(&path, verified["public-key"].as_str().unwrap()).unwrap();
    path
}

/// `warden audit verify --public-key`: whether it passed, and its output.
fn verify_public(state: &Path, key: &Path) -> (bool, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", "verify", "--public-key"])
        .arg(key)
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap();
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}
