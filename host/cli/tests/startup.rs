//! `warden serve` answers `initialize` before its plugins are loaded and
//! loads them in the background. What a client can observe of that:
//!
//! - the first `tools/list`, sent at once after `initialize`, is the whole
//!   list (configured and installed plugins), never part of it;
//! - a call sent at once after `initialize` runs (it waits for the load);
//! - a plugin that fails to load still stops the host with its reason,
//!   even after a client was answered; one refused at admission lets no
//!   listing succeed meanwhile, and one whose code fails the load's check
//!   (after its tools were listed from its signed manifest) runs no call.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn initialize(stdin: &mut impl Write) {
    for message in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "startup-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
}

/// Runs `warden serve --stdio` with `args`, initializes, sends `messages`
/// at once and reads every answer until the host exits by itself: its
/// exit status, the answers and its standard error.
fn serve_until_exit(
    args: &[&std::ffi::OsStr],
    messages: &[Value],
) -> (std::process::ExitStatus, Vec<Value>, String) {
    let (mut child, stdin) = start(args, messages);
    let answers: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let (status, err) = exit_of(child);
    drop(stdin);
    (status, answers, err)
}

/// Spawns `warden serve --stdio` with `args`, initializes and sends
/// `messages`; its input stays open.
fn start(
    args: &[&std::ffi::OsStr],
    messages: &[Value],
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["serve", "--stdio"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    initialize(&mut stdin);
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    (child, stdin)
}

/// Waits for the host to exit: its exit status and its standard error.
fn exit_of(mut child: std::process::Child) -> (std::process::ExitStatus, String) {
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

/// The fs plugin signed by the test publisher in `dir`, and a config
/// that serves it trusting that publisher.
fn signed_fs(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let component = dir.join("fs.wasm");
    std::fs::copy(warden_test_artifacts::FS, &component).unwrap();
    let mut sig = component.clone().into_os_string();
    sig.push(".sig");
    std::fs::copy(format!("{}.sig", warden_test_artifacts::FS), &sig).unwrap();
    let config = dir.join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugins]]\npath = \"{}\"\n\n[signers]\npublishers = [{{ name = \"warden-tests\", key = \"{}\" }}]\n",
            component.display(),
            warden_test_artifacts::public_key_file().display(),
        ),
    )
    .unwrap();
    (component, config)
}

/// Changes one byte in the middle of `path`, keeping its size.
fn flip_a_byte(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_first_tools_list_is_whole_and_a_first_call_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(dir.path(), "");
    let o = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "plugin",
            "install",
            warden_test_artifacts::SEARCH,
            "--config",
        ])
        .arg(&config)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Several starts: each sends everything at once, before any answer.
    for _ in 0..3 {
        let mut server = support::Server::start(&config, &state);
        server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
        server.call(2, "fs_read", json!({"path": "hello.txt"}));
        // The two are answered in either order.
        let (a, b) = (server.next(), server.next());
        let (list, call) = if a["id"] == 1 { (a, b) } else { (b, a) };
        let names = tool_names(&list);
        for wanted in ["fs_read", "fs_write", "http_fetch", "search_grep"] {
            assert!(
                names.iter().any(|n| n == wanted),
                "`{wanted}` (configured and installed plugins) in {names:?}"
            );
        }
        assert_eq!(call["id"], 2, "{call}");
        assert_eq!(call["result"]["isError"], false, "{call}");
        assert!(call.to_string().contains("hello"), "{call}");
        server.kill();
    }
}

#[test]
fn a_plugin_that_fails_to_load_stops_the_host_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // Signed by the test publisher, then changed: refused at admission.
    let (component, config) = signed_fs(dir.path());
    flip_a_byte(&component);

    // The host stops by itself; whatever it answered before, no listing
    // succeeded.
    let (status, answers, err) = serve_until_exit(
        &[
            "--config".as_ref(),
            config.as_ref(),
            "--state-dir".as_ref(),
            state.as_ref(),
        ],
        &[json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})],
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains("fs.wasm") && err.contains("tampered"),
        "names the file and the failed check: {err}"
    );
    for answer in &answers {
        if answer["id"] == 1 {
            assert!(answer["result"].is_null(), "no partial list: {answer}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("tampered"), "{answer}");
        }
    }
}

/// Runs `warden serve --stdio` with `args`, lists the tools, and closes
/// the session once the list is answered: the list, the exit status and
/// stderr.
fn list_and_close(args: &[&std::ffi::OsStr]) -> (Value, std::process::ExitStatus, String) {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (mut child, stdin) = start(args, &[list]);
    let answer = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .find(|answer| answer["id"] == 1)
        .unwrap_or_default();
    // Closing the input ends the session.
    drop(stdin);
    let (status, err) = exit_of(child);
    (answer, status, err)
}

/// The attack: a start admitted a plugin and remembered that admission,
/// so the next start need not hash the file again; then the file is
/// rewritten with one byte changed, its size kept and its modification
/// time put back. The next start must see the change (the change time
/// moved), hash the file and refuse it.
#[test]
fn a_plugin_rewritten_with_its_old_mtime_after_a_start_is_refused_at_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (component, config) = signed_fs(dir.path());
    let args: [&std::ffi::OsStr; 4] = [
        "--config".as_ref(),
        config.as_ref(),
        "--state-dir".as_ref(),
        state.as_ref(),
    ];
    // A file is remembered only once its change time is two seconds old.
    std::thread::sleep(std::time::Duration::from_millis(2300));
    let (list, status, err) = list_and_close(&args);
    assert!(status.success(), "{err}");
    assert!(tool_names(&list).contains(&"fs_read".to_owned()), "{list}");
    let memo = std::fs::read_to_string(state.join("plugins/admitted.json")).unwrap();
    assert!(
        memo.contains("fs.wasm"),
        "the start remembered its admission: {memo}"
    );

    let modified = std::fs::metadata(&component).unwrap().modified().unwrap();
    flip_a_byte(&component);
    std::fs::File::options()
        .write(true)
        .open(&component)
        .unwrap()
        .set_modified(modified)
        .unwrap();

    let (status, _, err) = serve_until_exit(&args, &[]);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains("fs.wasm") && err.contains("tampered"),
        "the rewritten file was hashed and refused: {err}"
    );
}

/// The attack: a trusted publisher's signature over a manifest that the
/// code does not match (here the summary was edited before signing). The
/// host lists the tools from the signed manifest while the code loads; a
/// call sent at once is decided meanwhile but must never run on code that
/// then fails the load's check, and the host stops naming the file and the
/// check.
#[test]
fn a_call_never_runs_on_a_plugin_whose_code_fails_the_load_check() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello from the workspace\n").unwrap();
    let component = dir.path().join("fs.wasm");
    let mut bytes = std::fs::read(warden_test_artifacts::FS).unwrap();
    let section = bytes
        .windows(15)
        .position(|w| w == b"warden:manifest")
        .unwrap();
    let (needle, forged) = (
        b"\"summary\":\"Read a UTF-8 text file".as_slice(),
        b"\"summary\":\"Read a UTF-9 text file".as_slice(),
    );
    let at = section
        + bytes[section..]
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap();
    bytes[at..at + forged.len()].copy_from_slice(forged);
    std::fs::write(&component, bytes).unwrap();
    warden_test_artifacts::sign(&component);
    let config = dir.path().join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "workspace = \"/workspace\"\n\n[[plugins]]\npath = \"{}\"\ngrant-fs = [\"{}:/workspace:ro\"]\n\n\
             [agents.alice]\nlevel = \"standard\"\n\n\
             [signers]\npublishers = [{{ name = \"warden-tests\", key = \"{}\" }}]\n",
            component.display(),
            ws.display(),
            warden_test_artifacts::public_key_file().display(),
        ),
    )
    .unwrap();

    let state = dir.path().join("state");
    let (status, answers, err) = serve_until_exit(
        &[
            "--agent".as_ref(),
            "alice".as_ref(),
            "--config".as_ref(),
            config.as_ref(),
            "--state-dir".as_ref(),
            state.as_ref(),
        ],
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "fs_read", "arguments": {"path": "hello.txt"}}}),
        ],
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains("fs.wasm") && err.contains("disagrees with its manifest"),
        "names the file and the failed check: {err}"
    );
    for answer in answers.iter().filter(|a| a["id"] == 2) {
        assert!(
            !answer.to_string().contains("hello from the workspace"),
            "the call ran: {answer}"
        );
        if answer["error"].is_null() {
            assert_eq!(answer["result"]["isError"], true, "{answer}");
            assert!(answer.to_string().contains("disagrees"), "{answer}");
        }
    }
}

#[test]
fn a_signal_stops_a_host_whose_client_stays_connected() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(dir.path(), "");
    let mut server = support::Server::start(&config, &state);
    assert!(
        tool_names(&{
            server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
            server.response(1)
        })
        .contains(&"fs_read".to_owned())
    );
    // stdin stays open: the client neither writes nor leaves.
    let pid = server.pid().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let started = std::time::Instant::now();
    let status = server.wait_exit(std::time::Duration::from_secs(20));
    assert!(
        status.is_some(),
        "warden serve still runs {:?} after SIGTERM",
        started.elapsed()
    );
}

#[test]
fn two_plugins_of_one_name_stop_the_host_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("fs-copy.wasm");
    std::fs::copy(warden_test_artifacts::FS, &copy).unwrap();
    std::fs::copy(
        format!("{}.sig", warden_test_artifacts::FS),
        dir.path().join("fs-copy.wasm.sig"),
    )
    .unwrap();
    let config = dir.path().join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugins]]\npath = \"{}\"\n\n[[plugins]]\npath = \"{}\"\n\n\
             [signers]\npublishers = [{{ name = \"warden-tests\", key = \"{}\" }}]\n",
            warden_test_artifacts::FS,
            copy.display(),
            warden_test_artifacts::public_key_file().display(),
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["serve", "--stdio", "--config"])
        .arg(&config)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("two plugins are named `fs`") && err.contains("fs-copy.wasm"),
        "names both: {err}"
    );
}

/// `warden serve --stdio` started as `2>&1` into one pipe: standard output
/// shares the pipe with the log, so it stays a blocking stream (the log's
/// writes must not fail on a full pipe), and the session works as over
/// separate pipes. Log lines in between are not JSON-RPC and are skipped.
#[test]
fn a_session_whose_stdout_is_also_stderr_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(dir.path(), "");
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["serve", "--stdio", "--agent", "alice", "--config"])
        .arg(&config)
        .arg("--state-dir")
        .arg(&state)
        .env("WARDEN_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    initialize(&mut stdin);
    for id in 1..=20 {
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "fs_read", "arguments": {"path": "hello.txt"}}})
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    let mut answered = std::collections::BTreeSet::new();
    let mut logged = 0;
    for line in BufReader::new(reader).lines() {
        let line = line.unwrap();
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            logged += 1;
            continue;
        };
        if let Some(id) = message["id"].as_u64().filter(|id| *id > 0) {
            assert_eq!(message["result"]["isError"], false, "{message}");
            assert!(message.to_string().contains("hello"), "{message}");
            answered.insert(id);
            if answered.len() == 20 {
                break;
            }
        }
    }
    assert_eq!(answered.len(), 20, "every call answered");
    assert!(logged > 0, "log lines shared the pipe");
    drop(stdin);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Standard input read from a file (not a pipe) is served too: the
/// handshake is answered, and the session ends at the file's end.
#[test]
fn a_session_read_from_a_file_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(dir.path(), "");
    let requests = dir.path().join("requests.jsonl");
    let mut text = Vec::new();
    initialize(&mut text);
    std::fs::write(&requests, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["serve", "--stdio", "--agent", "alice", "--config"])
        .arg(&config)
        .arg("--state-dir")
        .arg(&state)
        .stdin(std::fs::File::open(&requests).unwrap())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let first: Value =
        serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(first["id"], 0, "{first}");
    assert!(first["result"]["serverInfo"].is_object(), "{first}");
}
