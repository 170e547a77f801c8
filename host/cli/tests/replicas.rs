//! Replicas over Streamable HTTP: two `warden serve --http` processes,
//! each with its own state directory and host key, on one PostgreSQL
//! database. A client that round-robins its requests between them works
//! with both protocol generations: a 2025-11-25 session made on A is
//! taken over by B from what its `initialize` said (the shared session
//! store), and 2026-07-28 requests need no session at all. When A is
//! killed in the middle of a call, the client's retry on B runs, the
//! session goes on there, and the audit chains of both replicas verify
//! (with the anchors each made of the other's head, and each replica's
//! key endorsed by the deployment's audit root) with A's decision on
//! record. A single host keeps its sessions
//! across a restart the same way.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{postgres_database, setup, warden_with};

/// A `warden serve --http` replica on an ephemeral loopback port.
struct Replica {
    child: Child,
    authority: String,
}

impl Replica {
    fn start(config: &Path, state: &Path) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--agent",
                "alice",
                "--config",
            ])
            .arg(config)
            .arg("--state-dir")
            .arg(state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let authority = loop {
            let line = lines
                .next()
                .expect("warden serve --http says where it serves")
                .unwrap();
            if let Some(rest) = line.split("serving MCP at http://").nth(1) {
                break rest.split('/').next().unwrap().to_owned();
            }
        };
        // Keep draining stderr so the replica never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        Replica { child, authority }
    }

    /// Stops the replica as an operator would (SIGTERM: it signs its
    /// chain's head on the way out).
    fn stop(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(self.child.wait().unwrap().success());
    }

    /// Kills the replica with SIGKILL (no shutdown of any kind).
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What came back for one POST.
#[derive(Debug)]
struct Reply {
    status: u16,
    session: Option<String>,
    /// The JSON-RPC response (an SSE stream's message that has an id).
    message: Value,
}

/// The body of a chunked HTTP/1.1 response.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..end]).unwrap().trim();
        let size = usize::from_str_radix(size.split(';').next().unwrap(), 16).unwrap();
        if size == 0 {
            break;
        }
        body.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
    body
}

/// One MCP request over a fresh connection: legacy requests name their
/// session, 2026-07-28 ones carry the protocol version instead.
fn post(authority: &str, session: Option<&str>, modern: bool, message: &Value) -> Reply {
    let body = message.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(session) = session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    if modern {
        // The routing headers 2026-07-28 requires (what a load balancer
        // may route on).
        head.push_str(&format!(
            "Mcp-Method: {}\r\n",
            message["method"].as_str().unwrap()
        ));
        if let Some(name) = message["params"]["name"].as_str() {
            head.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
    }
    head.push_str(&format!(
        "MCP-Protocol-Version: {}\r\n\r\n",
        if modern { "2026-07-28" } else { "2025-11-25" }
    ));
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let raw_body = &raw[split + 4..];
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(raw_body)
    } else {
        raw_body.to_vec()
    };
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let session = String::from_utf8_lossy(&raw[..split])
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        });
    let text = String::from_utf8_lossy(&body).into_owned();
    let message = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or(Value::Null);
    Reply {
        status,
        session,
        message,
    }
}

/// A 2025-11-25 `initialize`; the session id the server gave.
fn initialize(authority: &str) -> String {
    let init = post(
        authority,
        None,
        false,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "replicas-test", "version": "0"}}}),
    );
    assert_eq!(init.status, 200, "{init:?}");
    init.session.expect("a legacy client gets a session")
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "round-robin", "version": "0"},
    })
}

fn call(id: u64, tool: &str, arguments: Value, modern: bool) -> Value {
    let mut params = json!({"name": tool, "arguments": arguments});
    if modern {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The text a successful call returned.
fn answered(reply: &Reply) -> String {
    assert_eq!(reply.status, 200, "{reply:?}");
    let result = &reply.message["result"];
    assert_ne!(result["isError"], true, "{reply:?}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_round_robin_client_is_served_by_either_replica_and_survives_one_dying() {
    let url = postgres_database();
    let dir = tempfile::tempdir().unwrap();
    // The deployment's audit root, handed to both replicas.
    let made = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["keygen", "--out"])
        .arg(dir.path().join("root.key"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let (config, state_a) = setup(
        dir.path(),
        &format!(
            "[[plugins]]\npath = \"{}\"\n\n[state]\nurl = \"{url}\"\nshared-key = \"shared.key\"\n\
             audit-root-key = \"root.key\"\n",
            warden_test_artifacts::SWAP_V1
        ),
    );
    let state_b = dir.path().join("state-b");
    let mut a = Replica::start(&config, &state_a);
    let mut b = Replica::start(&config, &state_b);
    let read = |id, modern| call(id, "fs_read", json!({"path": "hello.txt"}), modern);

    // 2025-11-25: the session is made on A, and B takes it over.
    let session = initialize(&a.authority);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(&a.authority, Some(&session), false, &initialized).status,
        202
    );
    for id in 1..=6 {
        let replica = if id % 2 == 0 { &a } else { &b };
        let reply = post(&replica.authority, Some(&session), false, &read(id, false));
        assert!(answered(&reply).contains("hello"), "call {id}: {reply:?}");
    }
    let unknown = post(
        &b.authority,
        Some("no-such-session"),
        false,
        &read(7, false),
    );
    assert_eq!(unknown.status, 404, "{unknown:?}");

    // 2026-07-28: no initialize, no session, either replica.
    for id in 10..=13 {
        let replica = if id % 2 == 0 { &a } else { &b };
        let reply = post(&replica.authority, None, true, &read(id, true));
        assert!(answered(&reply).contains("hello"), "call {id}: {reply:?}");
        assert_eq!(reply.session, None, "no session on 2026-07-28");
    }

    // A dies in the middle of a call; the client retries it on B.
    let slow = call(20, "swap_which", json!({"millis": 3000}), false);
    let authority = a.authority.clone();
    let (sent, session_a) = (slow.clone(), session.clone());
    let in_flight = std::thread::spawn(move || post(&authority, Some(&session_a), false, &sent));
    let env = [("WARDEN_STATE_URL", url.as_str())];
    // Each replica appends to a chain of its own (its host key's).
    let slow_records = |state: &Path| -> Vec<String> {
        let records = warden_with(&["audit", "export", "--json"], state, &env);
        let mut kinds: Vec<String> = records
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                // A decision names the call, an outcome the tool.
                let event = &r["event"];
                event["tool"] == "swap_which"
                    || event["call"]
                        .as_str()
                        .is_some_and(|c| c.starts_with("swap_which"))
            })
            .map(|r| r["kind"].as_str().unwrap().to_owned())
            .collect();
        kinds.sort();
        kinds
    };
    // Killed once its decision is on record: the tool is running.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while slow_records(&state_a).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow call never started on A"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    a.kill();
    let lost = in_flight.join().unwrap();
    assert_ne!(
        lost.message["result"]["content"][0]["text"]
            .as_str()
            .map(|t| t.contains("finished")),
        Some(true),
        "A answered before it died: {lost:?}"
    );
    let retried = post(&b.authority, Some(&session), false, &slow);
    assert!(answered(&retried).contains("finished"), "{retried:?}");
    let after = post(&b.authority, Some(&session), false, &read(21, false));
    assert!(answered(&after).contains("hello"), "{after:?}");
    b.stop();

    // Both replicas' chains verify; A's decision for the call it never
    // finished is on record, and B's retry has its decision and outcome.
    // From A's state directory: A's chain with its host key (the tail
    // it had no time to sign is checked by its tags), B's, which B signed
    // when it stopped, with B's public key, and the anchors the replicas
    // made of each other's heads while they ran.
    let verified = warden_with(&["audit", "verify"], &state_a, &env);
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["other-chains"][0]["ok"], true, "{verified}");
    assert!(verified["anchors"].as_u64().unwrap() > 0, "{verified}");
    // Both replicas endorsed their keys with the root they were handed.
    let root = dir.path().join("root.key.pub");
    let root = root.to_str().unwrap();
    let endorsed = warden_with(&["audit", "verify", "--audit-root", root], &state_a, &env);
    assert_eq!(endorsed["ok"], true, "{endorsed}");
    assert_eq!(endorsed["endorsed-chains"], 2, "{endorsed}");
    assert_eq!(endorsed["unendorsed-chains"], json!([]), "{endorsed}");
    assert_eq!(slow_records(&state_a), ["decision"]);
    assert_eq!(slow_records(&state_b), ["decision", "outcome"]);
}

/// One host on its SQLite file: a 2025-11-25 session outlives a restart
/// (even a SIGKILL), so the client goes on without initializing again.
#[test]
fn a_legacy_session_outlives_a_restart_of_a_single_host() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(dir.path(), "");
    let mut host = Replica::start(&config, &state);
    let session = initialize(&host.authority);
    let read = call(1, "fs_read", json!({"path": "hello.txt"}), false);
    assert!(answered(&post(&host.authority, Some(&session), false, &read)).contains("hello"));
    host.kill();

    let again = Replica::start(&config, &state);
    let reply = post(&again.authority, Some(&session), false, &read);
    assert!(answered(&reply).contains("hello"), "{reply:?}");
}
