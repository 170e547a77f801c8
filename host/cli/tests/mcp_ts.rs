//! The official MCP TypeScript SDK drives a real `warden serve` over stdio
//! and Streamable HTTP (bearer tokens): listing and calling tools with
//! output-schema validation, denials and tool errors as readable error
//! results, asks answered by elicitation or approved by the operator,
//! progress, cancellation and `tools/list_changed`. The client script is
//! `tests/mcp-ts/client.mjs`; `cargo xtask test` runs `npm ci` there and
//! names the installed `node_modules` in `WARDEN_TEST_NODE_MODULES`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "tests fail loudly and show the client's transcript"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "support/mcp_fixture.rs"]
mod mcp_fixture;

use mcp_fixture::Fixture;

/// `tests/mcp-ts`, where the client script and its `node_modules` live.
fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp-ts")
}

/// Checks that `WARDEN_TEST_NODE_MODULES` names `tests/mcp-ts/node_modules`
/// with the SDK installed: Node resolves the client's imports from there.
fn check_node_modules() {
    let Some(named) = std::env::var_os("WARDEN_TEST_NODE_MODULES") else {
        panic!(
            "WARDEN_TEST_NODE_MODULES is not set: run the suite with `cargo xtask test`, which runs `npm ci` in tests/mcp-ts to install the MCP TypeScript SDK"
        );
    };
    let named = PathBuf::from(named);
    let sdk = named.join("@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "WARDEN_TEST_NODE_MODULES={} has no @modelcontextprotocol/sdk: run `npm ci` in tests/mcp-ts",
        named.display()
    );
    let expected = client_dir().join("node_modules");
    assert!(
        named.canonicalize().ok() == expected.canonicalize().ok(),
        "WARDEN_TEST_NODE_MODULES={} is not {}, where client.mjs resolves the SDK from",
        named.display(),
        expected.display()
    );
}

fn drive(transport: &str) {
    check_node_modules();
    let fixture = Fixture::new();
    let output = Command::new("node")
        .arg(client_dir().join("client.mjs"))
        .args(["--transport", transport])
        .args(["--warden", env!("CARGO_BIN_EXE_warden")])
        .arg("--config")
        .arg(fixture.path("warden.toml"))
        .arg("--state")
        .arg(fixture.path("state"))
        .arg("--workspace")
        .arg(fixture.path("ws"))
        .args(["--extra-plugin", warden_test_artifacts::HELLO])
        .env("WARDEN_STATE_DIR", fixture.path("state"))
        .output()
        .unwrap_or_else(|e| {
            panic!("node runs the TypeScript SDK client ({e}): is Node.js installed?")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the TypeScript SDK client's checks failed over {transport}:\n{stdout}\n--- stderr ---\n{stderr}"
    );
}

#[test]
fn stdio() {
    drive("stdio");
}

#[test]
fn streamable_http_with_a_bearer_token() {
    drive("http");
}
