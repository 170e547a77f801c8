//! The MCP server in-process: a raw JSON-RPC client over an in-memory
//! stream (stdio framing) and over real HTTP, against the real gate and
//! real plugins. Covers the call paths the Python SDK tests drive, plus
//! protocol abuse: malformed JSON, unknown methods, oversized bodies, and
//! a client that disconnects mid-call.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use warden_api::{ApprovalAnswer, Grants};
use warden_gate::{ApprovalBook, Gate};
use warden_mcp::{DisclosureConfig, HttpOptions, Server, ServerOptions};
use warden_policy::{Policy, config::PolicyConfig};
use warden_test_artifacts::error_envelope;

use crate::common;
use crate::wire::Wire;

struct Host {
    server: Server,
    book: Arc<ApprovalBook>,
    _ws: tempfile::TempDir,
}

async fn host(disclosure: DisclosureConfig) -> Host {
    host_with(disclosure, true).await
}

async fn host_with(disclosure: DisclosureConfig, elicitation: bool) -> Host {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hello\n").unwrap();
    let grants = Grants {
        fs: vec![warden_api::FsGrant {
            host_path: ws.path().to_path_buf(),
            guest_path: "/workspace".into(),
            access: warden_api::FsAccess::ReadWrite,
        }],
        ..Grants::default()
    };
    let config: PolicyConfig = toml::from_str(
        r#"
        [levels.reader]
        categories = ["file-system"]
        file-scope = "project-directory"
        network = "none"
        terminal = "none"
        git = "local-only"
        code-execution = "containerized"
        [agents.alice]
        level = "standard"
        rules = { allow = ["probe_run"] }
        [agents.bob]
        level = "reader"
        "#,
    )
    .unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let book = Arc::new(ApprovalBook::new(Duration::from_secs(60)));
    let mut builder = Gate::builder()
        .env(crate::common::workspace_env())
        .approver(book.clone())
        .limits(common::limits())
        .backend("fs", Arc::new(common::fs_plugin().await), grants.clone())
        .unwrap()
        .backend("probe", Arc::new(common::probe().await), grants)
        .unwrap();
    for agent in policy.agents() {
        builder = builder.agent(agent.clone());
    }
    let server = Server::new(
        Arc::new(builder.build()),
        book.clone(),
        ServerOptions {
            name: "warden".into(),
            version: "test".into(),
            disclosure,
            elicitation,
            approvals: Default::default(),
            request_state_key: b"an-mcp-test-request-state-key-0123456789".to_vec(),
        },
    )
    .unwrap();
    Host {
        server,
        book,
        _ws: ws,
    }
}

fn tool_names(response: &Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn call(wire: &mut Wire, id: u64, name: &str, args: Value) -> (Value, Vec<Value>) {
    wire.request(id, "tools/call", json!({"name": name, "arguments": args}))
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_calls_denials_and_pending_approvals() {
    let host = host(DisclosureConfig::default()).await;
    let mut alice = Wire::start(&host.server, "alice");
    alice.initialize(json!({})).await;
    let (list, _) = alice.request(1, "tools/list", json!({})).await;
    let names = tool_names(&list);
    assert!(names.contains(&"probe_run".to_owned()), "{names:?}");
    let read = &list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fs_read")
        .unwrap()["annotations"];
    assert_eq!(read["readOnlyHint"], true);

    let mut bob = Wire::start(&host.server, "bob");
    bob.initialize(json!({})).await;
    let (list, _) = bob.request(1, "tools/list", json!({})).await;
    let bob_names = tool_names(&list);
    assert!(
        !bob_names.contains(&"probe_run".to_owned()) && bob_names.contains(&"fs_read".to_owned())
    );

    let (ok, seen) = call(&mut alice, 2, "fs_read", json!({"path": "hello.txt"})).await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert!(
        seen.is_empty(),
        "no log lines before logging/setLevel: {seen:?}"
    );

    let (denied, _) = call(&mut alice, 3, "fs_read", json!({"path": "/etc/shadow"})).await;
    let envelope = &error_envelope(&denied["result"]);
    assert_eq!(envelope["status"], "error");
    assert_eq!(envelope["error_type"], "PermissionDenied");

    let write = json!({"path": "new.txt", "content": "x"});
    let (pending, _) = call(&mut alice, 4, "fs_write", write.clone()).await;
    assert_eq!(
        error_envelope(&pending["result"])["domain_code"],
        "approval_pending",
        "{pending}"
    );
    let id = host.book.pending()[0].id.clone();
    // Bob cannot spend Alice's approval.
    let mut bobs = host.book.get(&id).unwrap();
    bobs.agent = "bob".into();
    assert!(
        host.book
            .answer_for_call(&id, &bobs, ApprovalAnswer::AllowOnce)
            .is_err()
    );
    host.book.answer(&id, ApprovalAnswer::AllowOnce).unwrap();
    let (done, _) = call(&mut alice, 5, "fs_write", write).await;
    assert_eq!(done["result"]["isError"], false, "{done}");
}

#[tokio::test(flavor = "multi_thread")]
async fn elicitation_answers_an_ask_inside_the_call() {
    let host = host(DisclosureConfig::default()).await;
    let mut alice = Wire::start(&host.server, "alice");
    alice.initialize(json!({"elicitation": {"form": {}}})).await;
    let answer = |rule: Option<&str>| {
        let mut content = json!({"decision": "always_allow"});
        if let Some(rule) = rule {
            content["rule"] = json!(rule);
        }
        json!({"action": "accept", "content": content})
    };
    let write = |id: u64, path: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "fs_write", "arguments": {"path": path, "content": "y"}}})
    };
    // A bare tool rule from the client would widen the agent's rules for
    // every write: refused, and the call does not run.
    alice.send(write(1, "e.txt")).await;
    let ask = alice.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["mode"], "form");
    let message = ask["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"content\": \"y\""),
        "the form shows the arguments: {message}"
    );
    alice
        .send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer(Some("fs_write"))}))
        .await;
    let (refused, _) = alice.until_response(1).await;
    assert_eq!(
        error_envelope(&refused["result"])["domain_code"],
        "approval_response_refused",
        "{refused}"
    );
    // The prefilled exact rule is the person's to add.
    alice.send(write(2, "e.txt")).await;
    let ask = alice.recv().await;
    alice
        .send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer(None)}))
        .await;
    let (done, _) = alice.until_response(2).await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    // It allows that call again without asking, and nothing else.
    let (again, seen) = call(
        &mut alice,
        3,
        "fs_write",
        json!({"path": "e.txt", "content": "y"}),
    )
    .await;
    assert_eq!(again["result"]["isError"], false, "{again}");
    assert!(seen.iter().all(|m| m["method"] != "elicitation/create"));
    alice.send(write(4, "f.txt")).await;
    let ask = alice.recv().await;
    assert_eq!(
        ask["method"], "elicitation/create",
        "another file still asks: {ask}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_elicitation_off_asks_wait_for_the_operator() {
    let host = host_with(DisclosureConfig::default(), false).await;
    let mut alice = Wire::start(&host.server, "alice");
    alice.initialize(json!({"elicitation": {"form": {}}})).await;
    let (pending, seen) = call(
        &mut alice,
        1,
        "fs_write",
        json!({"path": "o.txt", "content": "x"}),
    )
    .await;
    assert!(
        seen.iter().all(|m| m["method"] != "elicitation/create"),
        "{seen:?}"
    );
    assert_eq!(
        error_envelope(&pending["result"])["domain_code"],
        "approval_pending",
        "{pending}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_logging_and_cancellation() {
    let host = host(DisclosureConfig::default()).await;
    let mut alice = Wire::start(&host.server, "alice");
    alice.initialize(json!({})).await;
    let (_, _) = alice
        .request(1, "logging/setLevel", json!({"level": "info"}))
        .await;
    let (done, seen) = alice
        .request(
            2,
            "tools/call",
            json!({"name": "probe_run", "arguments": {"action": "steps", "steps": 3, "ms": 5},
                   "_meta": {"progressToken": "p1"}}),
        )
        .await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    let progress: Vec<f64> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    assert!(
        seen.iter()
            .any(|m| m["method"] == "notifications/message" && m["params"]["logger"] == "warden"),
        "the host's decision line reaches the client: {seen:?}"
    );

    // A long call, cancelled: its progress stops and the session serves on.
    alice
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "probe_run", "arguments": {"action": "steps", "steps": 1000, "ms": 20},
                       "_meta": {"progressToken": "p2"}}}))
        .await;
    loop {
        let m = alice.recv().await;
        if m["method"] == "notifications/progress" {
            break;
        }
    }
    alice
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 3, "reason": "test"}}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (ok, seen) = call(&mut alice, 4, "probe_run", json!({"action": "noop"})).await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    let before = seen
        .iter()
        .filter(|m| m["params"]["progressToken"] == "p2")
        .count();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, later) = call(&mut alice, 5, "probe_run", json!({"action": "noop"})).await;
    let after = later
        .iter()
        .filter(|m| m["params"]["progressToken"] == "p2")
        .count();
    assert!(
        before <= 20 && after == 0,
        "the cancelled call kept running: {before} then {after}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn disclosure_loads_tools_and_announces_changes() {
    let host = host(DisclosureConfig {
        mode: warden_mcp::DisclosureMode::On,
        ..DisclosureConfig::default()
    })
    .await;
    let mut alice = Wire::start(&host.server, "alice");
    alice.initialize(json!({})).await;
    let (list, _) = alice.request(1, "tools/list", json!({})).await;
    assert_eq!(
        tool_names(&list),
        ["list_tools", "load_tool", "load_tool_resource"]
    );
    let (l1, _) = call(&mut alice, 2, "list_tools", json!({})).await;
    assert!(
        l1["result"]["structuredContent"]["tools"]
            .as_array()
            .unwrap()
            .len()
            >= 5
    );
    let (l2, seen) = call(&mut alice, 3, "load_tool", json!({"name": "fs_read"})).await;
    assert!(l2["result"]["structuredContent"]["tool"]["input_schema"].is_object());
    // The notice comes before the answer to the call that changed the list.
    assert!(
        seen.iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{seen:?}"
    );
    let (list, _) = alice.request(4, "tools/list", json!({})).await;
    assert!(tool_names(&list).contains(&"fs_read".to_owned()));
    let (missing, _) = call(&mut alice, 5, "load_tool", json!({"name": "nope_x"})).await;
    assert_eq!(missing["result"]["isError"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn protocol_abuse_gets_clear_errors() {
    let host = host(DisclosureConfig::default()).await;
    let mut alice = Wire::start(&host.server, "alice");
    alice.initialize(json!({})).await;
    let (unknown, _) = alice.request(1, "tools/frobnicate", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let (bad, _) = alice.request(2, "tools/call", json!({"nome": 3})).await;
    assert!(bad["error"]["code"].is_i64(), "{bad}");
    alice.send_raw("{this is not json").await;
    alice.send_raw(r#"{"jsonrpc": "2.0", "id": 9}"#).await;
    let (ok, _) = alice.request(3, "tools/list", json!({})).await;
    assert!(ok["result"]["tools"].is_array(), "still serving: {ok}");
}

async fn http(host: &Host, tokens: Vec<(String, String)>) -> (String, CancellationToken) {
    http_on(host, tokens, None).await
}

/// [`http`] with `workers` threads serving connections.
async fn http_on(
    host: &Host,
    tokens: Vec<(String, String)>,
    workers: Option<std::num::NonZeroUsize>,
) -> (String, CancellationToken) {
    let shutdown = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let options = HttpOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        tokens,
        admin_tokens: vec!["admin-token-0123456789".into()],
        open_agent: None,
        allowed_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        max_body_bytes: 64 << 10,
        sessions: None,
        oauth: None,
        console: None,
        workers,
        busy_poll: std::time::Duration::from_micros(50),
    };
    let server = host.server.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        warden_mcp::serve_http(server, options, stop, |addr| {
            let _ = tx.send(addr);
        })
        .await
        .unwrap();
    });
    let addr = rx.await.unwrap();
    (format!("http://{addr}"), shutdown)
}

/// One HTTP/1.1 request; returns status and body.
async fn post(base: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    use tokio::io::AsyncReadExt;
    let authority = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test(flavor = "multi_thread")]
async fn http_refuses_strangers_and_survives_abuse() {
    let host = host(DisclosureConfig::default()).await;
    let token = "alice-token-0123456789";
    let (base, shutdown) = http(&host, vec![(token.into(), "alice".into())]).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let bearer = format!("Bearer {token}");

    let (status, text) = post(&base, "/mcp", &[], init.as_bytes()).await;
    assert_eq!(status, 401, "{text}");
    assert!(text.ends_with("\r\n\r\n"), "a 401 carries nothing: {text}");
    let (status, _) = post(
        &base,
        "/mcp",
        &[("Authorization", "Bearer nope-nope-nope-nope")],
        init.as_bytes(),
    )
    .await;
    assert_eq!(status, 401);
    let (status, text) = post(
        &base,
        "/mcp",
        &[
            ("Authorization", &bearer),
            ("Origin", "http://evil.example"),
        ],
        init.as_bytes(),
    )
    .await;
    assert_eq!(status, 403, "{text}");
    let (status, text) = post(&base, "/mcp", &[("Authorization", &bearer)], b"{not json").await;
    assert!((400..500).contains(&status), "malformed JSON: {text}");
    let huge = vec![b' '; 128 << 10];
    let (status, text) = post(&base, "/mcp", &[("Authorization", &bearer)], &huge).await;
    assert_eq!(status, 413, "oversized: {text}");
    // The admin API needs its own token.
    let (status, _) = post(
        &base,
        "/admin/approvals/ap-1",
        &[("Authorization", &bearer)],
        b"{}",
    )
    .await;
    assert_eq!(status, 401);
    // After all that, a proper session works.
    initializes(&base, &bearer, &init).await;
    shutdown.cancel();
}

/// `init` posted with `bearer` is answered with a session.
async fn initializes(base: &str, bearer: &str, init: &str) {
    let (status, text) = post(base, "/mcp", &[("Authorization", bearer)], init.as_bytes()).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("protocolVersion"), "{text}");
}

/// The session id a response's headers carry.
fn session_id(response: &str) -> String {
    response
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in {response}"))
}

/// With one thread for every connection, a guest that computes for
/// seconds still lets another connection be served: the guest yields at
/// every epoch tick, and the other connection's requests run meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn one_http_worker_serves_others_while_a_guest_computes() {
    let host = host(DisclosureConfig::default()).await;
    let token = "alice-token-0123456789";
    let (base, shutdown) = http_on(
        &host,
        vec![(token.into(), "alice".into())],
        std::num::NonZeroUsize::new(1),
    )
    .await;
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let (status, text) = post(
        &base,
        "/mcp",
        &[("Authorization", &bearer)],
        init.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let session = session_id(&text);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let (status, text) = post(&base, "/mcp", &headers, initialized.as_bytes()).await;
    assert_eq!(status, 202, "{text}");
    let spin = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "probe_run", "arguments": {"action": "spin", "ms": 4000}}})
    .to_string();
    let (spin_base, spin_bearer, spin_session) = (base.clone(), bearer.clone(), session.clone());
    let spinning = tokio::spawn(async move {
        let headers = [
            ("Authorization", spin_bearer.as_str()),
            ("Mcp-Session-Id", spin_session.as_str()),
        ];
        post(&spin_base, "/mcp", &headers, spin.as_bytes()).await
    });
    // Time for the spin to reach the guest.
    tokio::time::sleep(Duration::from_millis(300)).await;
    initializes(&base, &bearer, &init).await;
    assert!(
        !spinning.is_finished(),
        "another connection was answered while the guest still computed"
    );
    let (status, text) = spinning.await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains(r#""isError":false"#),
        "the spin ran to its end: {text}"
    );
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_disconnects_mid_call_harms_no_one() {
    let host = host(DisclosureConfig::default()).await;
    let mut first = Wire::start(&host.server, "alice");
    first.initialize(json!({})).await;
    first
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "probe_run", "arguments": {"action": "steps", "steps": 1000, "ms": 20}}}))
        .await;
    drop(first);
    let mut second = Wire::start(&host.server, "alice");
    second.initialize(json!({})).await;
    let (ok, _) = call(&mut second, 1, "probe_run", json!({"action": "noop"})).await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
}

#[test]
fn a_public_address_without_tokens_refuses_to_start() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let host = host(DisclosureConfig::default()).await;
        let options = HttpOptions {
            addr: "0.0.0.0:0".parse().unwrap(),
            tokens: Vec::new(),
            admin_tokens: Vec::new(),
            open_agent: Some("alice".into()),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_body_bytes: 1 << 20,
            sessions: None,
            oauth: None,
            console: None,
            workers: None,
            busy_poll: std::time::Duration::ZERO,
        };
        let err = warden_mcp::serve_http(
            host.server.clone(),
            options,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("no bearer tokens"), "{err}");
    });
}
