//! A `warden serve` bridging the fixture MCP server (`tests/bridge-fixture`)
//! as `fx`, and what the bridge tests ask of it: `warden bridge` against
//! the running server, its status, the fixture's event log, the published
//! names and list-change notices.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Server, setup};

/// The fixture server's binary, built with the workspace (its own tests
/// make cargo build it); built here when a run left it out.
pub fn fixture_binary() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_warden")).parent().unwrap();
    let path = dir.join("warden-bridge-fixture");
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "warden-bridge-fixture"])
            .status()
            .unwrap();
        assert!(status.success(), "building the fixture server");
    }
    path
}

pub struct Bridged {
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub state: PathBuf,
}

impl Bridged {
    /// The fs and http plugins, agent alice, and `entry` (a `[[bridge]]`
    /// entry and any TOML after it); `{log}` in it is the fixture's event
    /// log.
    pub fn with(entry: &str) -> Bridged {
        Bridged::with_log(|log| entry.replace("{log}", &log.display().to_string()))
    }

    /// As [`Bridged::with`], the entry made from the path of the
    /// fixture's event log (to start a fixture the entry then points to).
    pub fn with_log(entry: impl FnOnce(&Path) -> String) -> Bridged {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let entry = entry(&path.join("fixture.log"));
        let (config, state) = setup(&path, &entry);
        Bridged {
            _dir: dir,
            dir: path,
            config,
            state,
        }
    }

    /// `warden serve --stdio` as alice, not yet started.
    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
        command
            .args(["serve", "--stdio", "--agent", "alice", "--config"])
            .arg(&self.config)
            .arg("--state-dir")
            .arg(&self.state);
        command
    }

    pub fn serve(&self) -> Server {
        Server::spawn(self.command())
    }

    /// The entry's call timeout made `timeout` (from the 20 s the tests'
    /// entries give).
    pub fn call_timeout(&self, timeout: &str) {
        let text = std::fs::read_to_string(&self.config).unwrap().replace(
            "call-timeout = \"20s\"",
            &format!("call-timeout = \"{timeout}\""),
        );
        std::fs::write(&self.config, text).unwrap();
    }

    /// `warden bridge ARGS` against the running server.
    pub fn bridge(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_warden"))
            .arg("bridge")
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .arg("--state-dir")
            .arg(&self.state)
            .env("WARDEN_ACTOR", "operator")
            .output()
            .unwrap()
    }

    pub fn status(&self) -> Value {
        let out = self.bridge(&["status", "fx", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        value["bridges"][0].clone()
    }

    /// Waits until the bridge has listed (or failed to list) its tools.
    pub fn listed(&self) -> Value {
        let start = Instant::now();
        loop {
            if self.dir.join("state/admin.sock").exists() {
                let out = self.bridge(&["status", "fx", "--json"]);
                if out.status.success() {
                    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
                    let status = value["bridges"][0].clone();
                    if status["state"] != "starting" {
                        return status;
                    }
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the bridge never listed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The fixture's event log (`FIXTURE_LOG`).
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("fixture.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub fn calls_of(&self, tool: &str) -> usize {
        self.events()
            .iter()
            .filter(|e| e["event"] == "call" && e["tool"] == tool)
            .count()
    }
}

/// The names of the bridged tools the client is shown.
pub fn fx_names(server: &mut Server, id: u64) -> Vec<String> {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    server.response(id)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("fx_"))
        .map(str::to_owned)
        .collect()
}

/// An error result's envelope.
pub fn envelope(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

/// Waits up to `limit` for a tools/list_changed notification.
pub fn list_changed_within(server: &Server, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match server.message_within(left) {
            Some(v) if v["method"] == "notifications/tools/list_changed" => return true,
            Some(_) => {}
            None => return false,
        }
    }
    false
}

/// The fixture's own result for `tool`, straight from a direct session
/// with it (no Warden in between).
pub fn direct(calls: &[(&str, Value)]) -> Vec<Value> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(fixture_binary())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "direct", "version": "0"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (i, (tool, args)) in calls.iter().enumerate() {
        send(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
        );
    }
    let mut results = vec![Value::Null; calls.len()];
    let mut left = calls.len();
    while left > 0 {
        let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if let Some(id) = v["id"].as_u64().filter(|id| *id > 0) {
            results[usize::try_from(id).unwrap() - 1] = v["result"].clone();
            left -= 1;
        }
    }
    drop(stdin);
    let _ = child.wait();
    results
}

/// Calls each of `kinds` through `server` (as `fx_{tool}`, ids from
/// `first_id`) and checks every result is the fixture's own, called
/// directly: Warden's answer may add `isError: false`, nothing else.
pub fn results_as_direct(server: &mut Server, kinds: &[(&str, Value)], first_id: u64) {
    let expected = direct(kinds);
    for (i, ((tool, args), want)) in kinds.iter().zip(&expected).enumerate() {
        let mut got = server.tool(first_id + i as u64, &format!("fx_{tool}"), args.clone());
        if want.get("isError").is_none() {
            assert_eq!(got["isError"], false, "{tool}: {got}");
            got.as_object_mut().unwrap().remove("isError");
        }
        assert_eq!(&got, want, "{tool}");
    }
}

/// A call of each of the fixture's content and structured-result kinds.
pub fn content_kinds() -> Vec<(&'static str, Value)> {
    vec![
        ("image", json!({})),
        ("audio", json!({})),
        ("resource", json!({})),
        ("link", json!({})),
        ("structured", json!({"n": 4})),
        ("structured_only", json!({})),
        ("structured_error", json!({})),
        ("null_structured", json!({})),
    ]
}
