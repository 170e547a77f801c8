//! A whole host started in process through `warden_server::Host`, the way
//! `warden serve` starts it (signed plugins, the state database, every
//! durable hook), with an injected clock: progressive trust kept in memory
//! and ticked, tasks named by MCP clients reaching the sandbox and ending
//! with their session.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::common::ManualClock;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use warden_api::{CallContext, CallRequest, ToolHost, TrustAdmin};
use warden_server::{Config, Host, HostOptions, ServeOptions};

const DAY: u64 = 24 * 60 * 60 * 1000;

struct Served {
    host: Host,
    clock: Arc<ManualClock>,
    dir: tempfile::TempDir,
}

impl Served {
    /// Stops the host; its directory (config, workspace, state) stays.
    async fn stop(self) -> tempfile::TempDir {
        self.host.shutdown().await;
        self.dir
    }
}

/// A host serving the fs plugin (signed by the test key) over a
/// workspace, as agent `worker`, plus `extra` configuration (where `{ws}`
/// is the workspace directory).
async fn start(extra: &str) -> Served {
    start_in(extra, crate::sandbox::workspace()).await
}

/// [`start`] in `dir`, which may hold the state of an earlier run.
async fn start_in(extra: &str, dir: tempfile::TempDir) -> Served {
    let ws: PathBuf = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "hello\n").unwrap();
    let text = format!(
        "workspace = \"/workspace\"\n\
         [[plugins]]\npath = \"{fs}\"\ngrant-fs = [\"{ws}:/workspace:rw\"]\n\
         [signers]\npublishers = [{{ name = \"tests\", key = \"{key}\" }}]\n{extra}",
        fs = warden_test_artifacts::FS,
        ws = ws.display(),
        key = warden_test_artifacts::public_key_file().display(),
    )
    .replace("{ws}", &ws.display().to_string());
    let path = dir.path().join("warden.toml");
    std::fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    let clock = ManualClock::at(DAY);
    let mut host = HostOptions::new(config, dir.path().join("state"));
    host.clock = clock.clone();
    let mut options = ServeOptions::new(host);
    options.agent = "worker".into();
    // The tick is driven by hand here (`Gate::trust_tick`, which the
    // server's periodic task calls).
    options.trust_tick = Duration::from_secs(3600);
    let host = Host::start(options).await.unwrap();
    Served { host, clock, dir }
}

fn read(n: u32) -> CallRequest {
    CallRequest {
        tool: "fs_read".into(),
        args: json!({"path": "a.txt"}),
        context: CallContext {
            principal: None,
            agent: "worker".into(),
            session: "s1".into(),
            task: None,
            request_id: n.to_string(),
        },
    }
}

fn stored_trust(served: &Served) -> Option<Value> {
    served
        .host
        .store()
        .trust("worker")
        .unwrap()
        .map(|t| t.state)
}

const MILESTONES: &str = r#"
[agents.worker]
level = "standard"
mode = "autonomous"
[progressive-trust]
strategy = "milestone"
initial-level = "sandboxed"
sandboxed-to-restricted = { tasks-completed = 2 }
restricted-to-standard = { tasks-completed = 1000 }
standard-to-elevated = { tasks-completed = 1000 }
re-verification = { interval-days = 0, decay-on-idle-days = 2, decay-on-error-rate = 1.0 }
"#;

/// Trust lives in memory while a host serves: a call's counts reach the
/// store at the next tick (no database work per call), a level change at
/// once with its audit record, and the tick — judged by the host's clock —
/// demotes an agent idle past the configured days.
#[tokio::test(flavor = "multi_thread")]
async fn a_served_host_keeps_trust_in_memory_and_ticks_it() {
    let s = start(MILESTONES).await;
    let gate = s.host.gate();
    assert!(gate.call(read(1)).await.is_ok());
    assert_eq!(
        stored_trust(&s),
        None,
        "one call's counters wait for the tick"
    );
    gate.trust_tick();
    let stored = stored_trust(&s).expect("the tick wrote the counters");
    assert_eq!(stored["stats"]["ok"], 1, "{stored}");

    // The second success meets the milestone: written and audited at once.
    assert!(gate.call(read(2)).await.is_ok());
    let stored = stored_trust(&s).unwrap();
    assert_eq!(stored["level"], "restricted", "{stored}");
    assert_eq!(gate.show("worker").unwrap()["level"], "restricted");

    // Three days later, without a call: the tick decays the idle agent.
    s.clock.set(DAY + 3 * DAY);
    gate.trust_tick();
    assert_eq!(gate.show("worker").unwrap()["level"], "sandboxed");
    assert_eq!(stored_trust(&s).unwrap()["level"], "sandboxed");
    let records = s.host.store().tail(10).unwrap();
    let trust: Vec<&Value> = records
        .iter()
        .filter(|r| r.kind == "trust")
        .map(|r| &r.event)
        .collect();
    assert!(
        trust
            .iter()
            .any(|e| e["to"] == "restricted" && e["from"] == "sandboxed"),
        "{trust:?}"
    );
    assert!(
        trust
            .iter()
            .any(|e| e["to"] == "sandboxed" && e["reason"].as_str().unwrap().contains("idle")),
        "{trust:?}"
    );
    s.stop().await;
}

/// What `warden trust feedback` and `approve` reach in a running host
/// (the admin API calls the gate): a change applies to the agent's policy
/// at once and survives a restart.
#[tokio::test(flavor = "multi_thread")]
async fn operators_change_trust_in_a_running_host_and_it_survives_a_restart() {
    let s = start(MILESTONES).await;
    let gate = s.host.gate();
    assert!(gate.feedback("worker", None, 0.9).is_ok());
    assert!(matches!(
        gate.feedback("worker", None, 1.5),
        Err(warden_api::TrustError::InvalidScore(_))
    ));
    assert!(matches!(
        gate.show("nobody"),
        Err(warden_api::TrustError::UnknownAgent(_))
    ));
    assert!(matches!(
        gate.approve(
            "worker",
            warden_api::Attribution {
                actor: "dana".into(),
                confirm: true,
                reason: Some("test".into()),
            }
        ),
        Err(warden_api::TrustError::NothingWaiting(_))
    ));
    for n in 0..2 {
        assert!(gate.call(read(n)).await.is_ok());
    }
    let again = start_in(MILESTONES, s.stop().await).await;
    let shown = again.host.gate().show("worker").unwrap();
    assert_eq!(shown["level"], "restricted", "{shown}");
    assert_eq!(shown["stats"]["feedback_count"], 1, "{shown}");
    again.stop().await;
}

/// MCP clients name tasks in `_meta`: calls of one task share a per-task
/// container, another task gets its own, and when the session ends its
/// tasks' containers are removed (before, they waited for the idle grace
/// period: every call carried no task, so per-task fell back to per-call).
#[tokio::test(flavor = "multi_thread")]
async fn tasks_named_by_a_client_share_a_container_until_the_session_ends() {
    let s = start(
        "[agents.worker]\nlevel = \"elevated\"\nmode = \"autonomous\"\n\
         [sandbox]\nstrategy = \"per-task\"\ngrace-period-secs = 600\n\
         grant-fs = [\"{ws}:/workspace:rw\"]\n",
    )
    .await;
    let (client, server) = tokio::io::duplex(1 << 20);
    let served = tokio::spawn(warden_mcp::serve_stream(
        s.host.mcp().clone(),
        "worker".into(),
        server,
    ));
    let (read_half, mut write_half) = tokio::io::split(client);
    let mut lines = BufReader::new(read_half).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        write_half.write_all(line.as_bytes()).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let pid = std::process::id();
    let (t1, t2) = (format!("t1-{pid}"), format!("t2-{pid}"));
    let mut hostnames = Vec::new();
    for (id, task) in [(1, &t1), (2, &t1), (3, &t2)] {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "terminal_exec", "arguments": {"command": "hostname"},
            "_meta": {"dev.warden/task": task}}}),
        )
        .await;
        let answer = loop {
            let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
                .await
                .expect("the server answers")
                .unwrap()
                .unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                break v;
            }
        };
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        hostnames.push(answer["result"]["structuredContent"]["stdout"].clone());
    }
    assert_eq!(hostnames[0], hostnames[1], "one task, one container");
    assert_ne!(
        hostnames[0], hostnames[2],
        "another task, another container"
    );
    let docker = warden_sandbox::Docker::connect().await.unwrap();
    let of = |task: &str| {
        let docker = &docker;
        let task = task.to_owned();
        async move {
            docker
                .list_managed(&[(warden_sandbox::spec::TASK_LABEL, task.as_str())])
                .await
                .unwrap()
                .len()
        }
    };
    assert_eq!((of(&t1).await, of(&t2).await), (1, 1));
    // The client goes away: the session ends, and its tasks with it.
    drop((write_half, lines));
    served.await.unwrap().ok();
    assert_eq!((of(&t1).await, of(&t2).await), (0, 0));
    s.stop().await;
}
