//! Crash safety of the durable state: `warden serve` is killed with
//! SIGKILL, repeatedly, in the middle of a burst of calls, approvals and
//! grants. After every restart, everything the host reported done is
//! there — answered approvals (the retried call runs), issued grants
//! (they still allow calls), audit records of every call it answered —
//! and the audit chain verifies.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
}

impl Server {
    fn start(config: &Path, state: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["serve", "--stdio", "--agent", "alice", "--config"])
            .arg(config)
            .arg("--state-dir")
            .arg(state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("warden serve starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            stdin,
            lines,
        };
        server.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "crash-test", "version": "0"}}}),
        );
        server.response(0);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
    }

    /// The next response (skipping notifications).
    fn next(&self) -> Value {
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the server answers");
            if v.get("id").is_some() {
                return v;
            }
        }
    }

    fn response(&self, id: u64) -> Value {
        let v = self.next();
        assert_eq!(v["id"], id, "{v}");
        v
    }

    fn kill(mut self) {
        // std's kill is SIGKILL on Unix: no shutdown code runs.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn warden(args: &[&str], state: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "warden {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_killed_host_keeps_everything_it_reported_done() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("granted")).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello\n").unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "workspace = \"/workspace\"\n\n[[plugins]]\npath = \"{}\"\ngrant-fs = [\"{}:/workspace:rw\"]\n\n\
             [agents.alice]\nlevel = \"standard\"\n",
            warden_test_artifacts::FS,
            ws.display()
        ),
    )
    .unwrap();

    let mut answered: Vec<(u64, String)> = Vec::new();
    let mut grants = BTreeSet::new();
    // Calls the host answered after running them, and calls it answered
    // with a refusal or a pending approval.
    let mut reported = BTreeSet::new();
    let mut decided = BTreeSet::new();
    for round in 0..5u64 {
        let mut server = Server::start(&config, &state);
        let base = (round + 1) * 1000;
        // The approval answered before the last kill: its retry runs now.
        if let Some((prev, id)) = answered.last() {
            server.call(
                base,
                "fs.write",
                json!({"path": format!("asked-{prev}.txt"), "content": "x"}),
            );
            let v = server.response(base);
            assert!(
                v["result"]["isError"] != true,
                "round {round}: the answer to {id} survived the kill: {v}"
            );
            reported.insert(base.to_string());
        }
        // Every grant issued so far still allows writes under its path.
        server.call(
            base + 1,
            "fs.write",
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
        }

        // A new ask, answered by a person through the admin socket.
        server.call(
            base + 2,
            "fs.write",
            json!({"path": format!("asked-{round}.txt"), "content": "x"}),
        );
        let pending = text(&server.response(base + 2));
        decided.insert((base + 2).to_string());
        let id = pending
            .split_whitespace()
            .find(|w| w.starts_with("ap-"))
            .map(|w| w.trim_end_matches([':', ',', '.']).to_owned())
            .unwrap_or_else(|| panic!("a pending approval: {pending}"));
        warden(&["approvals", "approve", &id], &state);
        answered.push((round, id));
        let grant = warden(
            &[
                "grants",
                "issue",
                "--agent",
                "alice",
                "--capability",
                "tool:fs.write",
                "--goal",
                "crash test",
                "--ttl",
                "3600",
                "--path",
                "/workspace/granted",
            ],
            &state,
        );
        grants.insert(grant["id"].as_str().unwrap().to_owned());

        // A burst of calls; the host is killed after a few answers, with
        // the rest in flight.
        for i in 0..30 {
            let (tool, args) = if i % 2 == 0 {
                ("fs.read", json!({"path": "hello.txt"}))
            } else {
                (
                    "fs.write",
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
        let records = warden(&["audit", "export", "--json"], &state);
        let of_kind = |kind: &str| -> BTreeSet<String> {
            records
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["kind"] == kind)
                .map(|r| r["event"]["request_id"].as_str().unwrap().to_owned())
                .collect()
        };
        let (decisions, outcomes) = (of_kind("decision"), of_kind("outcome"));
        let missing: Vec<_> = reported.difference(&outcomes).collect();
        assert!(
            missing.is_empty(),
            "round {round}: calls run but not audited: {missing:?}"
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
}
