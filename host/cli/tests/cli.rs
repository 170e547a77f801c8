//! The `warden` binary as users run it: output on stdout, exit codes
//! 0 (ok), 1 (tool error or denial), 2 (usage or load error).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn warden(args: &[&str], state: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .env("WARDEN_STATE_DIR", state)
        .output()
        .expect("warden runs")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn call_prints_the_envelope_and_exits_by_outcome() {
    let state = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hi there\n").unwrap();
    let grant = format!("{}:/workspace:ro", ws.path().display());

    let out = warden(
        &[
            "call",
            "fs.read",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            r#"{"path":"hello.txt"}"#,
            "--grant-fs",
            &grant,
        ],
        state.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["data"]["content"], "hi there\n");

    // Writing under a read-only grant: a tool error, exit 1.
    let out = warden(
        &[
            "call",
            "fs.write",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            r#"{"path":"x","content":"y"}"#,
            "--grant-fs",
            &grant,
        ],
        state.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(
        (
            v["status"].as_str(),
            v["error_type"].as_str(),
            v["domain_code"].as_str()
        ),
        (Some("error"), Some("ToolError"), Some("access_denied"))
    );
    assert!(v["message"].as_str().unwrap().contains("grant"));

    // No grant at all: the same read is refused.
    let out = warden(
        &[
            "call",
            "fs.read",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            r#"{"path":"/workspace/hello.txt"}"#,
        ],
        state.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_json(&out)["domain_code"], "outside_grant");
}

#[test]
fn usage_and_load_errors_exit_2() {
    let state = tempfile::tempdir().unwrap();
    let out = warden(
        &[
            "call",
            "fs.read",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            "{not json",
        ],
        state.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--args"));

    let bad = state.path().join("broken.wasm");
    std::fs::write(&bad, b"\0asm garbage").unwrap();
    let out = warden(
        &["call", "fs.read", "--plugin", bad.to_str().unwrap()],
        state.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("broken.wasm"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = warden(
        &[
            "call",
            "fs.read",
            "--plugin",
            warden_test_artifacts::FS,
            "--grant-fs",
            "/no/such/dir",
        ],
        state.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/dir"));

    let out = warden(&["call"], state.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn inspect_shows_tools_without_running_code() {
    let state = tempfile::tempdir().unwrap();
    let out = warden(
        &["plugin", "inspect", warden_test_artifacts::FS, "--json"],
        state.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    assert!(v["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(v["manifest"]["capabilities"]["filesystem"], "read-write");
    let names: Vec<&str> = v["manifest"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["fs.read", "fs.write", "fs.edit", "fs.list", "fs.delete"]
    );
    assert!(v["manifest"]["tools"][0]["params-schema"]["properties"]["path"].is_object());

    let out = warden(
        &["plugin", "inspect", warden_test_artifacts::FS],
        state.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fs.edit  [file-system, code:write, side effects]"),
        "{text}"
    );
    assert!(text.contains("requests filesystem: read-write"), "{text}");
}
