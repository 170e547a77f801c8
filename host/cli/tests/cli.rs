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
        .env("WARDEN_SIGNERS", warden_test_artifacts::signers_file())
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
            "fs_read",
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

    // Writing under a read-only grant, with the policy allowing it: WASI
    // refuses; a tool error, exit 1.
    let out = warden(
        &[
            "call",
            "fs_write",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            r#"{"path":"x","content":"y"}"#,
            "--grant-fs",
            &grant,
            "--allow",
            "fs_write",
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
            "fs_read",
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
            "fs_read",
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
        &["call", "fs_read", "--plugin", bad.to_str().unwrap()],
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
            "fs_read",
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
        ["fs_read", "fs_write", "fs_edit", "fs_list", "fs_delete"]
    );
    assert!(v["manifest"]["tools"][0]["params-schema"]["properties"]["path"].is_object());

    let out = warden(
        &["plugin", "inspect", warden_test_artifacts::FS],
        state.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fs_edit  [file-system, code:write, side effects]"),
        "{text}"
    );
    assert!(text.contains("requests filesystem: read-write"), "{text}");
}

#[test]
fn the_policy_decides_before_the_plugin_runs() {
    let state = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let grant = format!("{}:/workspace:rw", ws.path().display());
    let write = |extra: &[&str]| {
        let mut argv = vec![
            "call",
            "fs_write",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            r#"{"path":"n.md","content":"hi"}"#,
            "--grant-fs",
            &grant,
        ];
        argv.extend_from_slice(extra);
        warden(&argv, state.path())
    };
    // Default mode, nobody at a terminal to ask: denied, with the rule that would allow it.
    let out = write(&[]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["error_type"], "PermissionDenied");
    assert_eq!(v["domain_code"], "approval_denied");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("fs_write(//workspace/n.md)"),
        "{v}"
    );
    assert!(!ws.path().join("n.md").exists());
    // Plan mode denies outright.
    let out = write(&["--mode", "plan"]);
    assert_eq!(stdout_json(&out)["domain_code"], "denied_by_mode");
    // An allow rule lets it through.
    let out = write(&["--allow", "fs_write(/n.md)"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("n.md")).unwrap(),
        "hi"
    );
}

#[test]
fn policy_check_prints_the_decision() {
    let state = tempfile::tempdir().unwrap();
    let check = |args: &[&str]| {
        let mut argv = vec!["policy", "check", "--json"];
        argv.extend_from_slice(args);
        let out = warden(&argv, state.path());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout_json(&out)
    };
    let v = check(&[
        "--tool",
        "terminal_exec",
        "--specifier",
        "ls && rm -rf /tmp/x",
        "--side-effect",
        "--allow",
        "terminal_exec(ls *)",
        "--deny",
        "terminal_exec(rm *)",
    ]);
    assert_eq!(
        v,
        serde_json::json!({"decision": "deny", "reason": v["reason"], "rule": "terminal_exec(rm *)", "layer": "rule"})
    );
    // A git tool's call is judged by what it does, as when served: a
    // push an allow rule covers runs in autonomous mode, a force push asks.
    for (force, decision, layer) in [
        ("false", "allow", "rule"),
        ("true", "ask", "circuit-breaker"),
    ] {
        let args = format!(r#"{{"remote":"origin","branch":"main","force":{force}}}"#);
        let v = check(&[
            "--tool",
            "git_push",
            "--action",
            "vcs:push",
            "--args",
            &args,
            "--template",
            "{remote}:{branch}",
            "--side-effect",
            "--mode",
            "autonomous",
            "--allow",
            "git_push(origin:*)",
        ]);
        assert_eq!(
            (v["decision"].as_str(), v["layer"].as_str()),
            (Some(decision), Some(layer)),
            "force {force}: {v}"
        );
    }
    // A deny rule on a file tool guards the file from every tool.
    let v = check(&[
        "--tool",
        "terminal_exec",
        "--specifier",
        "cat secrets/key",
        "--side-effect",
        "--deny",
        "fs_read(/secrets/**)",
    ]);
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["rule"], "protect.read(/secrets/**)", "{v}");
    let v = check(&[
        "--tool",
        "fs_write",
        "--args",
        r#"{"path":"src/a.rs"}"#,
        "--side-effect",
        "--workspace",
        "/w",
        "--allow",
        "fs_write(/src/**)",
    ]);
    assert_eq!(
        (v["decision"].as_str(), v["layer"].as_str()),
        (Some("allow"), Some("rule"))
    );
    let v = check(&[
        "--tool",
        "fs_write",
        "--specifier",
        "a",
        "--side-effect",
        "--mode",
        "plan",
    ]);
    assert_eq!(v["decision"], "deny");
    // No level gating without a config: a deployment tool is decided by rules and mode alone.
    let v = check(&[
        "--tool",
        "deploy_prod",
        "--side-effect",
        "--mode",
        "autonomous",
    ]);
    assert_eq!(v["decision"], "allow");
}

#[test]
fn config_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("warden.toml");
    std::fs::write(&bad, "[agents.a]\nlevel = \"standard\"\nmode = \"yolo\"\n").unwrap();
    let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agents.a.mode") && err.contains("yolo"),
        "{err}"
    );

    std::fs::write(&bad, "[agents.a]\nlevel = \"standard\"\nconstraints = { requires-approval = [\"code:explode\"] }\n").unwrap();
    let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agents.a.constraints.requires-approval") && err.contains("code:explode"),
        "{err}"
    );

    std::fs::write(
        &bad,
        "[agents.a]\nlevel = \"standard\"\ncolour = \"blue\"\n",
    )
    .unwrap();
    let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("agents.a") && err.contains("colour"), "{err}");

    // An audit root endorses replicas' chains in a shared database only.
    std::fs::write(&bad, "[state]\naudit-root-key = \"root.key\"\n").unwrap();
    let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("audit-root-key") && err.contains("[state] url"),
        "{err}"
    );

    // Busy polling is bounded: a window of seconds would spend a core
    // on every answer.
    std::fs::write(&bad, "[serve]\nbusy-poll-us = 2000000\n").unwrap();
    let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("serve.busy-poll-us") && err.contains("2000000") && err.contains("1000"),
        "{err}"
    );

    // The Kubernetes sandbox table is checked when it is the backend.
    std::fs::write(
        &bad,
        "[sandbox]\nbackend = \"kubernetes\"\n[sandbox.kubernetes]\nruntime-class = \"G Visor\"\n",
    )
    .unwrap();
    let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sandbox.kubernetes.runtime-class") && err.contains("G Visor"),
        "{err}"
    );
}

#[test]
fn tools_list_shows_what_the_agent_may_use() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugins]]\npath = {:?}\n\n[agents.cli]\nlevel = \"standard\"\ndenied = [\"fs_delete\"]\n",
            warden_test_artifacts::FS
        ),
    )
    .unwrap();
    let out = warden(
        &[
            "tools",
            "list",
            "--config",
            config.to_str().unwrap(),
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fs_edit", "fs_list", "fs_read", "fs_write"]);
}

#[test]
fn the_committed_schema_is_current() {
    let dir = tempfile::tempdir().unwrap();
    let out = warden(&["config", "schema"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/warden.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        live, committed,
        "docs/warden.schema.json is stale: run `warden config schema > docs/warden.schema.json`"
    );
}

#[test]
fn unknown_categories_and_levels_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("warden.toml");
    for (text, key, word) in [
        (
            "[levels.r]\ncategories = [\"filesystem\"]\nfile-scope = \"full\"\nnetwork = \"open\"\nterminal = \"full\"\ngit = \"full\"\ncode-execution = \"containerized\"\n",
            "levels.r.categories",
            "filesystem",
        ),
        (
            "[agents.a]\nlevel = \"godmode\"\n",
            "agents.a.level",
            "godmode",
        ),
        (
            "[agents.a]\nlevel = \"standard\"\nrules = { allow = [\"fs_read(x\"] }\n",
            "agents.a.rules",
            "fs_read(x",
        ),
    ] {
        std::fs::write(&bad, text).unwrap();
        let out = warden(&["config", "check", bad.to_str().unwrap()], dir.path());
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(key) && err.contains(word), "{err}");
    }
}

/// The example in docs/configuration.md parses and compiles.
#[test]
fn the_documented_example_config_is_valid() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/configuration.md"
    ))
    .unwrap();
    let example = doc
        .split("## Example\n\n```toml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("warden.toml");
    std::fs::write(&file, example).unwrap();
    let out = warden(&["config", "check", file.to_str().unwrap()], dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("claude"));
}

/// The `warden.toml` of the Kubernetes manifests (`deploy/`, the base and
/// the gVisor overlay) loads and validates, `[sandbox.kubernetes]` too.
#[test]
fn the_deployment_configs_are_valid() {
    for manifest in [
        "deploy/base/config.yaml",
        "deploy/overlays/gvisor/config.yaml",
    ] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(manifest),
        )
        .unwrap();
        // The ConfigMap's block scalar: the lines after `warden.toml: |`,
        // indented by four spaces.
        let toml: String = text
            .split("  warden.toml: |\n")
            .nth(1)
            .unwrap()
            .lines()
            .take_while(|l| l.is_empty() || l.starts_with("    "))
            .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
            .collect();
        assert!(
            toml.contains("backend = \"kubernetes\""),
            "{manifest}: {toml}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("warden.toml");
        std::fs::write(&file, &toml).unwrap();
        let out = warden(&["config", "check", file.to_str().unwrap()], dir.path());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{manifest}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `warden call fs_read` of a FIFO ends (it used to hang past any
/// `--timeout-ms`, holding the open on the call's thread), with a reason
/// that says what was refused. A watchdog frees the FIFO if it hangs.
#[test]
fn call_of_a_fifo_ends_with_a_reason() {
    let state = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let fifo = ws.path().join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let grant = format!("{}:/workspace:ro", ws.path().display());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let (done, fifo) = (done.clone(), fifo.clone());
        std::thread::spawn(move || {
            for _ in 0..600 {
                if done.load(std::sync::atomic::Ordering::SeqCst) {
                    return false;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            // Still running after a minute: free the blocked open.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
            true
        })
    };
    let out = warden(
        &[
            "call",
            "fs_read",
            "--plugin",
            warden_test_artifacts::FS,
            "--args",
            r#"{"path":"pipe"}"#,
            "--grant-fs",
            &grant,
            "--timeout-ms",
            "2000",
        ],
        state.path(),
    );
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(!watchdog.join().unwrap(), "the call hung on the FIFO");
    let v = stdout_json(&out);
    assert_eq!(v["status"], "error", "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(message.contains("FIFO"), "{v}");
}

/// `warden … | head`: a reader that closes early ends the command quietly,
/// with no panic and no backtrace.
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let state = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["plugin", "inspect", warden_test_artifacts::FS])
        .env("WARDEN_STATE_DIR", state.path())
        .env("RUST_BACKTRACE", "1")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// Tools were `plugin.tool`; they are `plugin_tool` now. A configuration
/// and flags still spelling the old names keep working for a release, and
/// each old name is reported with its rewrite.
#[test]
fn old_dotted_tool_names_still_apply_and_are_reported_with_their_rewrite() {
    let state = tempfile::tempdir().unwrap();
    let config = state.path().join("warden.toml");
    std::fs::write(
        &config,
        "[agents.a]\nlevel = \"standard\"\ndenied = [\"http.*\"]\n\
         rules = { deny = [\"fs.read(/secrets/**)\"] }\n\
         [capability-grants]\nauto-grant = [\"tool:fs.write\"]\n",
    )
    .unwrap();
    let c = config.to_str().unwrap();
    let out = warden(&["config", "check", c], state.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    for rewrite in [
        "agents.a.rules.deny: `fs.read(/secrets/**)` is now `fs_read(/secrets/**)`",
        "agents.a.denied: `http.*` is now `http_*`",
        "capability-grants.auto-grant: `tool:fs.write` is now `tool:fs_write`",
    ] {
        assert!(said.contains(rewrite), "{rewrite}\n{said}");
    }

    let check = |extra: &[&str]| {
        let mut argv = vec!["policy", "check", "--json", "--config", c, "--agent", "a"];
        argv.extend_from_slice(extra);
        let out = warden(&argv, state.path());
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        (
            stdout_json(&out),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (v, _) = check(&["--tool", "fs_read", "--specifier", "/workspace/secrets/key"]);
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(
        v["rule"], "fs_read(/secrets/**)",
        "the rule is cited by its new name"
    );
    let (v, _) = check(&["--tool", "http_fetch", "--specifier", "https://example.com"]);
    assert_eq!(v["decision"], "deny", "the old glob still denies: {v}");
    let (v, stderr) = check(&[
        "--tool",
        "fs_write",
        "--specifier",
        "/workspace/tmp/x",
        "--side-effect",
        "--deny",
        "fs.write(/tmp/**)",
    ]);
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(
        stderr.contains("--deny 'fs.write(/tmp/**)' is deprecated")
            && stderr.contains("--deny 'fs_write(/tmp/**)'"),
        "{stderr}"
    );
}
