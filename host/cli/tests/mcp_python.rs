//! The official MCP Python SDK drives a real `warden serve` over stdio and
//! Streamable HTTP, speaking both protocol generations (an `initialize`
//! session and 2026-07-28 discovery). The client script is
//! `tests/mcp/client.py`; `cargo xtask test` installs the SDK into a
//! virtualenv and names its interpreter in `WARDEN_TEST_PYTHON`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "tests fail loudly and show the client's transcript"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("hello.txt"), "hello from the workspace\n").unwrap();
        let config = |serve_extra: &str| {
            format!(
                r#"
workspace = "/workspace"

[[plugins]]
path = "{fs}"
grant-fs = ["{ws}:/workspace:rw"]

[[plugins]]
path = "{probe}"
grant-fs = ["{ws}:/workspace:rw"]

[levels.reader]
categories = ["file-system"]
file-scope = "project-directory"
network = "none"
terminal = "none"
git = "local-only"
code-execution = "containerized"

[agents.alice]
level = "standard"
approvals = "client"
rules = {{ allow = ["probe.run"] }}

[agents.bob]
level = "reader"

[serve]
approval-timeout-secs = 60
{serve_extra}

[[serve.tokens]]
agent = "alice"
token = "alice-token-0123456789"

[[serve.tokens]]
agent = "bob"
token = "bob-token-0123456789ab"

[signers]
publishers = [{{ name = "warden-tests", key = "{key}" }}]
"#,
                key = warden_test_artifacts::public_key_file().display(),
                fs = warden_test_artifacts::FS,
                probe = warden_test_artifacts::PROBE,
                ws = ws.display(),
            )
        };
        let base = config("");
        std::fs::write(dir.path().join("warden.toml"), &base).unwrap();
        std::fs::write(
            dir.path().join("operator.toml"),
            config("elicitation = false"),
        )
        .unwrap();
        let disclosure = format!("{base}\n[serve.disclosure]\nmode = \"on\"\n");
        std::fs::write(dir.path().join("disclosure.toml"), disclosure).unwrap();
        Fixture { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn python() -> PathBuf {
    match std::env::var_os("WARDEN_TEST_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "WARDEN_TEST_PYTHON is not set: run the suite with `cargo xtask test`, which installs the MCP Python SDK into a virtualenv"
        ),
    }
}

fn drive(transport: &str, protocol: &str) {
    let fixture = Fixture::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/client.py");
    let output = Command::new(python())
        .arg(script)
        .args(["--warden", env!("CARGO_BIN_EXE_warden")])
        .arg("--config")
        .arg(fixture.path("warden.toml"))
        .arg("--disclosure-config")
        .arg(fixture.path("disclosure.toml"))
        .arg("--operator-config")
        .arg(fixture.path("operator.toml"))
        .arg("--workspace")
        .arg(fixture.path("ws"))
        .arg("--state")
        .arg(fixture.path("state"))
        .args(["--extra-plugin", warden_test_artifacts::HELLO])
        .args(["--transport", transport, "--protocol", protocol])
        .env("WARDEN_STATE_DIR", fixture.path("state"))
        .output()
        .expect("the Python client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the MCP client's checks failed over {transport}/{protocol}:\n{stdout}\n--- stderr ---\n{stderr}"
    );
}

#[test]
fn stdio_with_an_initialize_session() {
    drive("stdio", "legacy");
}

#[test]
fn stdio_with_2026_discovery() {
    drive("stdio", "modern");
}

#[test]
fn http_with_an_initialize_session() {
    drive("http", "legacy");
}

#[test]
fn http_with_2026_discovery() {
    drive("http", "modern");
}
