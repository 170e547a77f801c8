//! The operator console in a real headless Chromium (Debian's, driven
//! over the DevTools protocol by `tests/mcp/console_browser.py`), against
//! a real `warden serve --http` and the official MCP Python SDK as the
//! agent's client: sign in, approve and deny what the agent asked,
//! live updates, CSRF- and cookie-less changes refused, hostile
//! arguments shown as text, a grant revoked, the audit trail filtered
//! and its chain verified, a plugin installed and removed, a blueprint
//! approved; a 2026-07-28 client given a link to its ask (URL-mode
//! elicitation). The answers are audited with the person's name. Screenshots of each page land in `target/tmp/console/`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "tests fail loudly and show the client's transcript"
)]

use std::path::Path;
use std::process::Command;

#[path = "support/python.rs"]
mod python;
use python::python;

#[path = "support/http_serve.rs"]
mod http_serve;
use http_serve::{free_port, serve};

const AGENT_TOKEN: &str = "agent-token-0123456789abcdef";
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef";

const BLUEPRINT: &str = r#"{
  "capability": "words:count",
  "title": "Count words",
  "description": "Counts the words of a text.",
  "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "output_schema": {"type": "object", "properties": {"words": {"type": "integer"}}},
  "body": {"rust": {"lib_rs": "use warden_sdk::tool;\n"}},
  "cases": [
    {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
    {"name": "none", "args": {"text": ""}, "expect": {"ok": {"fields": [{"pointer": "/words", "equals": 0}]}}},
    {"name": "missing", "args": {}, "expect": {"error": {"contains": "text"}}}
  ],
  "rationale": "Agents asked for word counts."
}"#;

fn chromium() -> String {
    std::env::var("WARDEN_TEST_CHROMIUM").unwrap_or_else(|_| {
        panic!("WARDEN_TEST_CHROMIUM is not set: run the suite with `cargo xtask test`, which installs Debian's chromium")
    })
}

#[test]
fn a_person_answers_an_agents_asks_in_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("granted")).unwrap();
    let config = format!(
        r#"
workspace = "/workspace"

[[plugins]]
path = "{fs}"
grant-fs = ["{ws}:/workspace:rw"]

[agents.ci]
level = "standard"

# The agent's first successful call earns a promotion that waits for a
# person: a trust change for the agents page's history, the level kept.
[progressive-trust]
strategy = "weighted"
initial-level = "standard"
sandboxed-to-restricted = 0.1
restricted-to-standard = 0.2
standard-to-elevated = 0.3

[[serve.tokens]]
agent = "ci"
token = "{AGENT_TOKEN}"

[[serve.admin-tokens]]
token = "{ADMIN_TOKEN}"

[toolsmith]
enabled = true
category = "analytics"
[toolsmith.sandbox]
network = "none"
[toolsmith.capabilities."words:*"]
action-type = "code:read"

[signers]
publishers = [{{ name = "warden-tests", key = "{key}" }}]
"#,
        fs = warden_test_artifacts::FS,
        ws = ws.display(),
        key = warden_test_artifacts::public_key_file().display(),
    );
    let config_path = dir.path().join("warden.toml");
    std::fs::write(&config_path, config).unwrap();
    let state = dir.path().join("state");
    let port = free_port();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    // A signed component the person installs, then removes, in the console.
    let component = dir.path().join("json.wasm");
    std::fs::copy(warden_test_artifacts::JSON, &component).unwrap();
    warden_test_artifacts::sign(&component);

    let served = serve(&config_path, &state, port);
    // An operator's grant the console will revoke.
    let issued = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "grants",
            "issue",
            "--agent",
            "ci",
            "--capability",
            "tool:fs_write",
        ])
        .args([
            "--goal",
            "console test",
            "--ttl",
            "3600",
            "--path",
            "/workspace/granted",
        ])
        .args([
            "--actor",
            "tester",
            "--confirm",
            "--reason",
            "the console revokes it",
        ])
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        issued.status.success(),
        "{}",
        String::from_utf8_lossy(&issued.stderr)
    );
    let grant: serde_json::Value = serde_json::from_slice(&issued.stdout).unwrap();
    let grant = grant["id"].as_str().unwrap().to_owned();
    // A blueprint waiting for an operator's `tool:create` answer.
    let blueprint = dir.path().join("blueprint.json");
    std::fs::write(&blueprint, BLUEPRINT).unwrap();
    let proposed = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["toolsmith", "propose"])
        .arg(&blueprint)
        .args(["--actor", "ops", "--config"])
        .arg(&config_path)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        proposed.status.success(),
        "{}",
        String::from_utf8_lossy(&proposed.stderr)
    );
    let proposed: serde_json::Value = serde_json::from_slice(&proposed.stdout).unwrap();
    let blueprint = proposed["id"].to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/console_browser.py");
    let output = Command::new(python())
        .arg(script)
        .args(["--url", &format!("http://127.0.0.1:{port}")])
        .args(["--token", AGENT_TOKEN, "--admin", ADMIN_TOKEN])
        .args(["--chromium", &chromium()])
        .arg("--workspace")
        .arg(&ws)
        .arg("--shots")
        .arg(&shots)
        .args(["--grant", &grant, "--blueprint", &blueprint])
        .arg("--component")
        .arg(&component)
        .output()
        .unwrap();
    drop(served);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the console's browser checks failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );
    for page in [
        "signin",
        "approvals",
        "answered",
        "live",
        "agents",
        "audit",
        "plugins",
        "linked",
    ] {
        assert!(
            shots.join(format!("{page}.png")).exists(),
            "no screenshot of {page}"
        );
    }

    // Both answers are on the audit chain, with who gave them.
    let tail = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", "tail", "-n", "100", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let audit = String::from_utf8_lossy(&tail.stdout);
    let by_dana: Vec<String> = audit
        .lines()
        .filter(|line| line.contains("console:dana\""))
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let event = &record["event"];
            format!(
                "{} {}",
                record["kind"].as_str().unwrap(),
                event["action"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        by_dana.len(),
        6,
        "the approval, the denial, the revoke, the removal, the blueprint's approval and the linked ask's approval name the person: {by_dana:?}\n{audit}"
    );
    assert!(by_dana.contains(&"grant revoked".to_owned()), "{by_dana:?}");
}

/// `warden serve --http` on `console` (a `[console]` table's lines) and
/// whatever else `extra` adds; it is expected to refuse to start (one
/// that serves instead is stopped after 60 s and fails the test).
fn refused_serve(console: &str, extra: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("warden.toml");
    std::fs::write(
        &config_path,
        format!(
            "[[plugins]]\npath = \"{}\"\n{extra}\n[console]\n{console}\n[signers]\npublishers = [{{ name = \"t\", key = \"{}\" }}]\n",
            warden_test_artifacts::FS,
            warden_test_artifacts::public_key_file().display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{}", free_port()),
            "--config",
        ])
        .arg(&config_path)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("warden served with [console] {console} instead of refusing it");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn the_console_needs_an_admin_token_to_sign_in_with() {
    let output = refused_serve("enabled = true", "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "served a console nobody can sign in to"
    );
    assert!(
        stderr.contains("console.enabled") && stderr.contains("admin-tokens"),
        "the error names the setting and the fix: {stderr}"
    );
}

#[test]
fn a_console_url_that_could_lead_links_astray_is_refused() {
    let admin = format!("[[serve.admin-tokens]]\ntoken = \"{ADMIN_TOKEN}\"");
    for (url, why) in [
        ("javascript:alert(1)", "not an http or https URL"),
        ("https://user:secret@warden.example", "credentials"),
        ("https://warden.example/?next=x", "query or a fragment"),
        ("warden.example", "not a URL"),
    ] {
        let output = refused_serve(&format!("url = \"{url}\""), &admin);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "served with console url {url}");
        assert!(
            stderr.contains("console.url") && stderr.contains(why),
            "the error names the setting and what is wrong with {url}: {stderr}"
        );
    }
}
