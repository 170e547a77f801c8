//! A served host under calls that would block: two concurrent `fs_read`s
//! of FIFOs (an open that waits for a writer forever) end, and a third
//! call and the admin API answer meanwhile. Before the host refused to
//! open special files, each such call held a thread of the host past its
//! deadline; two of them stalled a 2-core host, admin API included.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::json;

#[test]
fn fifo_reads_end_and_the_host_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(dir.path(), "");
    let ws = dir.path().join("ws");
    for name in ["pipe-1", "pipe-2"] {
        assert!(
            Command::new("mkfifo")
                .arg(ws.join(name))
                .status()
                .unwrap()
                .success()
        );
    }
    let mut server = support::Server::start(&config, &state);
    server.call(1, "fs_read", json!({"path": "pipe-1"}));
    server.call(2, "fs_read", json!({"path": "pipe-2"}));
    server.call(3, "fs_read", json!({"path": "hello.txt"}));
    // The admin API answers while those calls are in flight.
    let plugins = support::warden(&["plugin", "list", "--json"], &state);
    assert!(plugins.to_string().contains("fs"), "{plugins}");
    // Every call answers (`next` fails after a minute of silence).
    let mut answers = BTreeMap::new();
    for _ in 0..3 {
        let v = server.next();
        answers.insert(v["id"].as_u64().unwrap(), v);
    }
    assert_eq!(
        answers[&3]["result"]["structuredContent"]["content"], "hello\n",
        "{:?}",
        answers[&3]
    );
    for id in [1, 2] {
        let text = support::text(&answers[&id]);
        assert_eq!(answers[&id]["result"]["isError"], true, "{text}");
        assert!(
            text.contains("FIFO"),
            "the reason says what was refused: {text}"
        );
    }
    server.kill();
}
