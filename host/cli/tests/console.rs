//! The operator console in a real headless Chromium (Debian's, driven
//! over the DevTools protocol by `tests/mcp/console_browser.py`), against
//! a real `warden serve --http` and the official MCP Python SDK as the
//! agent's client: sign in, approve and deny what the agent asked,
//! live updates, CSRF- and cookie-less changes refused, hostile
//! arguments shown as text, a grant revoked, the audit trail filtered
//! and its chain verified, a plugin installed and removed, a blueprint
//! approved. The answers are audited with the person's
//! name. Screenshots of each page land in `target/tmp/console/`.

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
        5,
        "the approval, the denial, the revoke, the removal and the blueprint's approval name the person: {by_dana:?}\n{audit}"
    );
    assert!(by_dana.contains(&"grant revoked".to_owned()), "{by_dana:?}");
}

#[test]
fn the_console_needs_an_admin_token_to_sign_in_with() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("warden.toml");
    std::fs::write(
        &config_path,
        format!(
            "[[plugins]]\npath = \"{}\"\n[console]\nenabled = true\n[signers]\npublishers = [{{ name = \"t\", key = \"{}\" }}]\n",
            warden_test_artifacts::FS,
            warden_test_artifacts::public_key_file().display()
        ),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{}", free_port()),
            "--config",
        ])
        .arg(&config_path)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .output()
        .unwrap();
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
