//! Driving the real `warden` binary: a `warden serve --stdio` session
//! and one-shot commands against the same state directory.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    dead_code,
    reason = "test support fails loudly; each test binary uses part of it"
)]

pub mod bridged;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

pub struct Server {
    child: Child,
    /// `None` once the client hung up ([`Server::close`]).
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
}

/// A test that fails midway leaves no server behind.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn start(config: &Path, state: &Path) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
        command
            .args(["serve", "--stdio", "--agent", "alice", "--config"])
            .arg(config)
            .arg("--state-dir")
            .arg(state);
        Server::spawn(command)
    }

    /// Runs `command` (a `warden serve --stdio`) and initializes a session.
    pub fn spawn(command: Command) -> Server {
        Server::spawn_with(command, json!({}))
    }

    /// [`Server::start`] with the server's log written to `log`.
    pub fn start_logging(config: &Path, state: &Path, log: &Path) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
        command
            .args(["serve", "--stdio", "--agent", "alice", "--config"])
            .arg(config)
            .arg("--state-dir")
            .arg(state)
            .stderr(std::fs::File::create(log).unwrap());
        Server::initialize(command, json!({}))
    }

    /// As [`Server::spawn`], the client declaring `capabilities`.
    pub fn spawn_with(mut command: Command, capabilities: Value) -> Server {
        command.stderr(Stdio::null());
        Server::initialize(command, capabilities)
    }

    fn initialize(mut command: Command, capabilities: Value) -> Server {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
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
            stdin: Some(stdin),
            lines,
        };
        server.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "crash-test", "version": "0"}}}),
        );
        server.response(0);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn call(&mut self, id: u64, tool: &str, args: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
    }

    /// Calls a tool and waits for its result.
    pub fn tool(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.call(id, tool, args);
        self.response(id)["result"].clone()
    }

    /// The next response (skipping notifications).
    pub fn next(&self) -> Value {
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

    /// The next message of any kind (a response or a notification), if
    /// one arrives within `limit`.
    pub fn message_within(&self, limit: Duration) -> Option<Value> {
        self.lines.recv_timeout(limit).ok()
    }

    /// The response `id`, and the notifications that arrived before it.
    pub fn response_and_notices(&self, id: u64) -> (Value, Vec<Value>) {
        let mut notices = Vec::new();
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the server answers");
            if v.get("id").is_some() {
                assert_eq!(v["id"], id, "{v}");
                return (v, notices);
            }
            notices.push(v);
        }
    }

    pub fn response(&self, id: u64) -> Value {
        let v = self.next();
        assert_eq!(v["id"], id, "{v}");
        v
    }

    pub fn kill(mut self) {
        // std's kill is SIGKILL on Unix: no shutdown code runs.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the server's stdin (the client hangs up) and returns how
    /// it exited, if it does within `limit` (else it is killed and None
    /// returned).
    pub fn close(mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        exit_within(&mut self.child, limit)
    }

    /// How the server exited, if it does within `limit` (else it is
    /// killed and None returned).
    pub fn wait_exit(mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        exit_within(&mut self.child, limit)
    }
}

fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

/// The text of a tools/call response or of its result.
pub fn text(response: &Value) -> String {
    let result = response.get("result").unwrap_or(response);
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub fn warden(args: &[&str], state: &Path) -> Value {
    warden_with(args, state, &[])
}

/// [`warden`] with environment variables set.
pub fn warden_with(args: &[&str], state: &Path, env: &[(&str, &str)]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "warden {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The approval id (`ap-N`) a pending result names.
pub fn approval_id(result: &Value) -> String {
    let t = text(result);
    t.split_whitespace()
        .find(|w| w.starts_with("ap-"))
        .map(|w| w.trim_end_matches([':', ',', '.', ';']).to_owned())
        .unwrap_or_else(|| panic!("a pending approval: {t}"))
}

/// A workspace with `hello.txt` and a config serving the fs and http plugins to
/// agent alice at level standard, plus `extra` TOML.
pub fn setup(dir: &Path, extra: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("granted")).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello\n").unwrap();
    let config = dir.join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "workspace = \"/workspace\"\n\n[[plugins]]\npath = \"{}\"\ngrant-fs = [\"{}:/workspace:rw\"]\n\n\
             [[plugins]]\npath = \"{}\"\n\n[agents.alice]\nlevel = \"standard\"\n\n\
             [signers]\npublishers = [{{ name = \"warden-tests\", key = \"{}\" }}]\n\n{extra}\n",
            warden_test_artifacts::FS,
            ws.display(),
            warden_test_artifacts::HTTP,
            warden_test_artifacts::public_key_file().display(),
        ),
    )
    .unwrap();
    (config, dir.join("state"))
}

/// A new empty database in the test suite's private PostgreSQL cluster
/// (`scripts/ensure-postgres` starts it once).
pub fn postgres_database() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-postgres");
    let out = Command::new("bash")
        .arg(script)
        .arg("--database")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/ensure-postgres: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `curl` over the admin socket: (status, body).
pub fn admin(socket: &Path, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut command = Command::new("curl");
    command
        .args(["-s", "-w", "\n%{http_code}", "--unix-socket"])
        .arg(socket)
        .args(["-X", method]);
    if let Some(body) = body {
        command
            .args(["-H", "content-type: application/json", "-d"])
            .arg(body.to_string());
    }
    let out = command
        .arg(format!("http://warden{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.trim_end().rsplit_once('\n').unwrap();
    (
        status.parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// `warden ARGS --config CONFIG --state-dir STATE`, and whether it worked.
pub fn run(args: &[&str], config: &Path, state: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .arg("--config")
        .arg(config)
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
