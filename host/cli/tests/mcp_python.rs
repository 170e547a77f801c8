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

use std::path::Path;
use std::process::Command;

#[path = "support/mcp_fixture.rs"]
mod mcp_fixture;

use mcp_fixture::Fixture;

#[path = "support/python.rs"]
mod python;
use python::python;

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
