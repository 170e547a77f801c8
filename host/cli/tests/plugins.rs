//! Signed plugins and the registry through the `warden` binary: keys,
//! signing and verification, refusals at start, installs that survive a
//! restart without compiling, and a watched directory served live.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn warden(args: &[&str], state: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .env("WARDEN_STATE_DIR", state)
        .env_remove("WARDEN_TRUST")
        .env_remove("WARDEN_SIGNERS")
        .env_remove("WARDEN_CONFIG")
        .output()
        .expect("warden runs")
}

fn out(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A trust file naming one publisher key.
fn trust(dir: &Path, name: &str, key: &Path) -> PathBuf {
    let path = dir.join(format!("{name}-trust.toml"));
    std::fs::write(
        &path,
        format!(
            "[[publishers]]\nname = \"{name}\"\nkey = \"{}\"\n",
            key.display()
        ),
    )
    .unwrap();
    path
}

/// Signing roots are "signers": `--signers` takes a signers file or a
/// publisher's `.pub` itself, and `[signers]` in a config; the old names
/// (`--trust`, `WARDEN_TRUST`, `[trust]`) still work, each with a warning
/// saying what to use instead.
#[test]
fn signers_by_their_new_names_and_the_old_ones_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let key = dir.path().join("acme.key");
    assert!(
        warden(&["keygen", "--out", key.to_str().unwrap()], &state)
            .status
            .success()
    );
    let public = dir.path().join("acme.key.pub");
    let component = dir.path().join("hello.wasm");
    std::fs::copy(warden_test_artifacts::HELLO, &component).unwrap();
    let c = component.to_str().unwrap();
    assert!(
        warden(&["sign", c, "--key", key.to_str().unwrap()], &state)
            .status
            .success()
    );
    let file = trust(dir.path(), "acme", &public);
    let deprecated = |stderr: &str| stderr.contains("deprecated") && stderr.contains("--signers");

    // New names, no warning: a signers file, or the key file itself.
    for signers in [&file, &public] {
        let o = warden(
            &["verify", c, "--signers", signers.to_str().unwrap()],
            &state,
        );
        let (stdout, stderr) = out(&o);
        assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
        assert!(stdout.contains("signed by acme"), "{stdout}");
        assert!(!stderr.contains("deprecated"), "{stderr}");
    }
    // The old flag and variable: the same answer, and a warning.
    let o = warden(&["verify", c, "--trust", file.to_str().unwrap()], &state);
    let (stdout, stderr) = out(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(deprecated(&stderr), "{stderr}");
    let o = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["verify", c])
        .env("WARDEN_TRUST", &file)
        .env_remove("WARDEN_SIGNERS")
        .env_remove("WARDEN_CONFIG")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = out(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(deprecated(&stderr), "{stderr}");

    // `[signers]` in a config; the old `[trust]` table read with a warning
    // that `warden config check` repeats.
    for (table, old) in [("signers", false), ("trust", true)] {
        let config = dir.path().join(format!("{table}.toml"));
        std::fs::write(
            &config,
            format!(
                "[{table}]\npublishers = [{{ name = \"acme\", key = \"{}\" }}]\n",
                public.display()
            ),
        )
        .unwrap();
        let o = warden(&["verify", c, "--config", config.to_str().unwrap()], &state);
        let (stdout, stderr) = out(&o);
        assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
        assert_eq!(
            stderr.contains("`[trust]` is now called `[signers]`"),
            old,
            "{stderr}"
        );
        let o = warden(&["config", "check", config.to_str().unwrap()], &state);
        let (stdout, stderr) = out(&o);
        assert!(o.status.success(), "{stdout}{stderr}");
        assert_eq!(stdout.contains("warning: "), old, "{stdout}");
    }
    // Both spellings at once are refused rather than merged.
    let both = dir.path().join("both.toml");
    std::fs::write(
        &both,
        "[signers]\ninsecure-allow-unsigned = true\n[trust]\n",
    )
    .unwrap();
    let o = warden(&["config", "check", both.to_str().unwrap()], &state);
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).1.contains("keep `[signers]`"), "{:?}", out(&o));
}

#[test]
fn keygen_sign_and_verify_report_the_signer_or_the_failed_check() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let key = dir.path().join("acme.key");
    let k = key.to_str().unwrap();
    let o = warden(&["keygen", "--out", k], &state);
    assert!(o.status.success(), "{:?}", out(&o));
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the secret key is owner-only");
    let public = dir.path().join("acme.key.pub");
    assert!(
        std::fs::read_to_string(&public)
            .unwrap()
            .starts_with("warden-public-key-v1")
    );
    let again = warden(&["keygen", "--out", k], &state);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        out(&again).1.contains("refusing to overwrite"),
        "{:?}",
        out(&again)
    );

    let component = dir.path().join("hello.wasm");
    std::fs::copy(warden_test_artifacts::HELLO, &component).unwrap();
    let c = component.to_str().unwrap();
    let o = warden(&["sign", c, "--key", k], &state);
    assert!(o.status.success(), "{:?}", out(&o));
    let acme = trust(dir.path(), "acme", &public);
    let t = acme.to_str().unwrap();
    let o = warden(&["verify", c, "--signers", t], &state);
    assert_eq!(o.status.code(), Some(0), "{:?}", out(&o));
    assert!(out(&o).0.contains("signed by acme"), "{:?}", out(&o));

    // Someone else's trust: unknown key.
    let other = dir.path().join("other.key");
    assert!(
        warden(&["keygen", "--out", other.to_str().unwrap()], &state)
            .status
            .success()
    );
    let other_trust = trust(dir.path(), "other", &dir.path().join("other.key.pub"));
    let o = warden(
        &["verify", c, "--signers", other_trust.to_str().unwrap()],
        &state,
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        out(&o).0.matches("unknown key").count(),
        1,
        "the cause is said once: {:?}",
        out(&o)
    );

    // One flipped byte: tampered.
    let mut bytes = std::fs::read(&component).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&component, bytes).unwrap();
    let o = warden(&["verify", c, "--signers", t], &state);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).0.contains("tampered"), "{:?}", out(&o));

    // No signature at all.
    std::fs::remove_file(dir.path().join("hello.wasm.sig")).unwrap();
    let o = warden(&["verify", c, "--signers", t], &state);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).0.contains("unsigned"), "{:?}", out(&o));
}

fn unsigned_config(dir: &Path, insecure: bool) -> PathBuf {
    let component = dir.join("hello.wasm");
    std::fs::copy(warden_test_artifacts::HELLO, &component).unwrap();
    let config = dir.join("warden.toml");
    let mut text = format!("[[plugins]]\npath = \"{}\"\n", component.display());
    if insecure {
        text.push_str("\n[trust]\ninsecure-allow-unsigned = true\n");
    }
    std::fs::write(&config, text).unwrap();
    config
}

#[test]
fn an_unsigned_plugin_stops_the_host_unless_the_insecure_flag_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = unsigned_config(dir.path(), false);
    let o = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["serve", "--stdio", "--config", config.to_str().unwrap()])
        .env("WARDEN_STATE_DIR", &state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("plugin `hello`") && err.contains("unsigned"),
        "names the plugin and the failed check: {err}"
    );
    assert!(
        !state.join("cache").exists()
            || std::fs::read_dir(state.join("cache"))
                .unwrap()
                .next()
                .is_none()
    );

    let insecure = tempfile::tempdir().unwrap();
    let config = unsigned_config(insecure.path(), true);
    let state = insecure.path().join("state");
    let mut s = Session::start(&["--config", config.to_str().unwrap()], &state, "warn");
    assert!(
        s.tools().iter().any(|t| t == "hello_count_lines"),
        "the unsigned plugin loaded"
    );
    let err = s.stop();
    assert!(err.contains("WARNING: insecure-allow-unsigned"), "{err}");
    let o = warden(
        &["plugin", "list", "--config", config.to_str().unwrap()],
        &state,
    );
    assert!(o.status.success(), "{:?}", out(&o));
    assert!(
        out(&o).0.contains("WARNING: insecure-allow-unsigned"),
        "{:?}",
        out(&o)
    );
}

/// A `warden serve --stdio` session driven line by line.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// The server's log, line by line, as it writes it.
    log: Receiver<String>,
    /// Every log line read so far.
    logged: Vec<String>,
    next: u64,
    /// Notifications seen so far.
    notes: Vec<Value>,
    /// List changes already waited for.
    changes_waited: usize,
}

impl Session {
    fn start(args: &[&str], state: &Path, log: &str) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
            .arg("serve")
            .arg("--stdio")
            .args(args)
            .env("WARDEN_STATE_DIR", state)
            .env("WARDEN_LOG", log)
            .env_remove("WARDEN_TRUST")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = line_by_line(child.stdout.take().unwrap());
        let log = line_by_line(child.stderr.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            lines,
            log,
            logged: Vec::new(),
            next: 1,
            notes: Vec::new(),
            changes_waited: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("warden exited during {method}"),
            };
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
            if v.get("method").is_some() && v.get("id").is_none() {
                self.notes.push(v);
            }
        }
    }

    /// The plugins' tools (not the host's own `request_capability`).
    fn tools(&mut self) -> Vec<String> {
        let v = self.request("tools/list", json!({}));
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .filter(|name| name != "request_capability")
            .collect()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }

    /// Waits for the server's next `tools/list_changed` (the watcher
    /// applied a change and announced it).
    fn next_list_change(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.list_changed() <= self.changes_waited {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(_) => panic!("no list change for {what}"),
            };
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("method").is_some() && v.get("id").is_none() {
                self.notes.push(v);
            }
        }
        self.changes_waited += 1;
    }

    /// Waits for a server log line containing `text`.
    fn logged(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.logged.iter().any(|l| l.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(l) => self.logged.push(l),
                Err(_) => panic!("the server never logged `{text}`"),
            }
        }
    }

    fn list_changed(&self) -> usize {
        self.notes
            .iter()
            .filter(|n| n["method"] == "notifications/tools/list_changed")
            .count()
    }

    fn stop(mut self) -> String {
        drop(self.stdin);
        let _ = self.child.wait();
        self.logged.extend(self.log.try_iter());
        self.logged.join("\n")
    }
}

/// The lines of `stream`, as they come, on a channel.
fn line_by_line(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

fn base_config(dir: &Path) -> PathBuf {
    let config = dir.join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "workspace = \"/workspace\"\n\n[trust]\npublishers = [{{ name = \"warden-tests\", key = \"{}\" }}]\n",
            warden_test_artifacts::public_key_file().display()
        ),
    )
    .unwrap();
    config
}

#[test]
fn five_installed_plugins_load_after_a_restart_without_compiling() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = base_config(dir.path());
    let cfg = config.to_str().unwrap();
    let five = [
        warden_test_artifacts::FS,
        warden_test_artifacts::HTTP,
        warden_test_artifacts::SEARCH,
        warden_test_artifacts::JSON,
        warden_test_artifacts::HELLO,
    ];
    for plugin in five {
        let o = warden(&["plugin", "install", plugin, "--config", cfg], &state);
        assert!(o.status.success(), "{:?}", out(&o));
    }
    let o = warden(&["plugin", "list", "--json", "--config", cfg], &state);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = listed["installed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fs", "hello", "http", "json", "search"]);
    assert!(
        listed["installed"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["publisher"] == "warden-tests")
    );

    let mut s = Session::start(&["--config", cfg], &state, "warden=info");
    let tools = s.tools();
    for tool in [
        "fs_read",
        "hello_count_lines",
        "http_fetch",
        "json_query",
        "search_grep",
    ] {
        assert!(tools.iter().any(|t| t == tool), "{tool} in {tools:?}");
    }
    let log = s.stop();
    let loaded: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("installed plugin loaded"))
        .collect();
    assert_eq!(loaded.len(), 5, "{log}");
    assert!(
        loaded.iter().all(|l| l.contains("origin=Cached")),
        "every plugin came from the compile cache, none was compiled: {log}"
    );
}

/// Copies a signed test component (and its signature) into `dir` as
/// `swap.wasm`, each by a rename so the watcher never sees half a file.
fn place(component: &str, dir: &Path, tamper: bool) {
    let mut bytes = std::fs::read(component).unwrap();
    if tamper {
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
    }
    let sig = std::fs::read(format!("{component}.sig")).unwrap();
    std::fs::write(dir.join("incoming.sig.tmp"), sig).unwrap();
    std::fs::rename(dir.join("incoming.sig.tmp"), dir.join("swap.wasm.sig")).unwrap();
    std::fs::write(dir.join("incoming.tmp"), bytes).unwrap();
    std::fs::rename(dir.join("incoming.tmp"), dir.join("swap.wasm")).unwrap();
}

#[test]
fn a_watched_directory_adds_replaces_and_removes_plugins_live() {
    warden_test_artifacts::signers_file();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let watched = dir.path().join("watched");
    std::fs::create_dir_all(&watched).unwrap();
    let config = base_config(dir.path());
    let mut s = Session::start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--watch",
            watched.to_str().unwrap(),
            "--watch-interval-ms",
            "50",
        ],
        &state,
        "warden=info",
    );
    assert!(s.tools().is_empty());
    let version = |s: &mut Session| {
        let r = s.call("swap_which", json!({"millis": 0}));
        r["structuredContent"]["started"]
            .as_str()
            .map(str::to_owned)
    };

    // Each change is announced to the client (tools/list_changed), which
    // then sees it.
    place(warden_test_artifacts::SWAP_V1, &watched, false);
    s.next_list_change("swap v1");
    assert!(s.tools().iter().any(|t| t == "swap_which"));
    assert_eq!(version(&mut s).as_deref(), Some("1.0.0"));

    place(warden_test_artifacts::SWAP_V2, &watched, false);
    s.next_list_change("swap v2");
    assert_eq!(version(&mut s).as_deref(), Some("2.0.0"));

    // A tampered replacement is refused (the server says so) and v2
    // keeps serving.
    place(warden_test_artifacts::SWAP_V1, &watched, true);
    s.logged("did not load; the previous version keeps serving");
    assert_eq!(version(&mut s).as_deref(), Some("2.0.0"));

    std::fs::remove_file(watched.join("swap.wasm")).unwrap();
    s.next_list_change("removal");
    assert!(s.tools().is_empty());
    let log = s.stop();
    assert!(
        log.contains("did not load; the previous version keeps serving")
            && log.contains("tampered"),
        "{log}"
    );
}
