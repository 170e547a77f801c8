//! An installed `warden` (`cargo xtask install`: `PREFIX/bin/warden` and
//! `PREFIX/share/warden/plugins`) serves its bundled plugins from any
//! working directory, and says where it looked when they are missing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::Server;

/// A prefix holding a copy of the binary and, when `with_plugins`, the fs
/// plugin with its signature and the key that signed it.
fn install(prefix: &Path, with_plugins: bool) -> PathBuf {
    let bin = prefix.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let warden = bin.join("warden");
    std::fs::copy(env!("CARGO_BIN_EXE_warden"), &warden).unwrap();
    if with_plugins {
        let share = prefix.join("share/warden/plugins");
        std::fs::create_dir_all(&share).unwrap();
        warden_test_artifacts::signers_file();
        let fs = Path::new(warden_test_artifacts::FS);
        std::fs::copy(fs, share.join("fs.wasm")).unwrap();
        let mut sig = fs.as_os_str().to_owned();
        sig.push(".sig");
        std::fs::copy(&sig, share.join("fs.wasm.sig")).unwrap();
        std::fs::copy(
            warden_test_artifacts::public_key_file(),
            share.join("warden-dev.pub"),
        )
        .unwrap();
    }
    warden
}

fn serve(warden: &Path, cwd: &Path, state: &Path) -> Command {
    let mut command = Command::new(warden);
    command
        .args(["serve", "--stdio", "--state-dir"])
        .arg(state)
        .current_dir(cwd)
        .env_remove("WARDEN_PLUGIN_DIR")
        .env_remove("WARDEN_CONFIG")
        .env_remove("WARDEN_SIGNERS")
        .env_remove("WARDEN_TRUST");
    command
}

#[test]
fn an_installed_warden_serves_its_bundled_plugins_from_any_directory() {
    let prefix = tempfile::tempdir().unwrap();
    let warden = install(prefix.path(), true);
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir(elsewhere.path().join("workspace")).unwrap();
    std::fs::write(elsewhere.path().join("workspace/hello.txt"), "hello\n").unwrap();
    let state = tempfile::tempdir().unwrap();

    let mut server = Server::spawn(serve(&warden, elsewhere.path(), state.path()));
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let list = server.response(1);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"fs_read"), "{list}");
    let read = server.tool(2, "fs_read", json!({"path": "hello.txt"}));
    assert_eq!(read["isError"], false, "{read}");
    assert!(support::text(&read).contains("hello"), "{read}");
    server.kill();
}

#[test]
fn without_bundled_plugins_serve_says_where_it_looked() {
    let prefix = tempfile::tempdir().unwrap();
    let warden = install(prefix.path(), false);
    let elsewhere = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let out = serve(&warden, elsewhere.path(), state.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let share = prefix.path().join("share/warden/plugins");
    assert!(
        stderr.contains("no bundled plugins found") && stderr.contains(&*share.to_string_lossy()),
        "{stderr}"
    );
    assert!(stderr.contains("cargo xtask install"), "{stderr}");
}
