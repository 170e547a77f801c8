//! Issue 21's end-to-end scenario: the official MCP Python SDK
//! (`tests/mcp/git_scenario.py`) drives a real `warden serve` as a
//! standard-level agent in default mode — clone from a loopback git
//! server on an allowlisted host, read and search, edit, run the tests in
//! the terminal sandbox, branch and commit — and the audit chain holds
//! the session afterwards. Needs Docker with the sandbox images and the
//! SDK's virtualenv in `WARDEN_TEST_PYTHON` (`cargo xtask test` provides
//! both).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "tests fail loudly and show the client's transcript"
)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use warden_sandbox::Docker;
use warden_sandbox::spec::AGENT_LABEL;

#[path = "support/python.rs"]
mod python;
use python::python;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Fixture", "-c", "user.email=f@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("these tests need git on the host to make the fixture repository");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn warden(args: &[&str], state: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "warden {args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_coding_agent_clones_edits_tests_branches_and_commits() {
    let docker = Docker::connect()
        .await
        .unwrap_or_else(|e| panic!("this test needs a Docker engine (scripts/ensure-docker): {e}"));
    let gateway = docker.bridge_gateway().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ws, site, state) = (
        dir.path().join("ws"),
        dir.path().join("site"),
        dir.path().join("state"),
    );
    for d in [&ws, &site] {
        std::fs::create_dir_all(d).unwrap();
    }
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let src = site.join("app-src");
    std::fs::create_dir_all(&src).unwrap();
    for (name, text) in [
        ("README.md", "A calculator.\n"),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        (
            "test.sh",
            "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)' && echo tests pass\n",
        ),
    ] {
        std::fs::write(src.join(name), text).unwrap();
    }
    git(&src, &["init", "-q"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "First"]);
    git(&site, &["clone", "-q", "--bare", "app-src", "app.git"]);
    git(&site.join("app.git"), &["update-server-info"]);

    let agent = "coder";
    let config = dir.path().join("warden.toml");
    std::fs::write(
        &config,
        format!(
            r#"
workspace = "/workspace"

[[plugins]]
path = "{fs}"
grant-fs = ["{ws}:/workspace:rw"]

[[plugins]]
path = "{search}"
grant-fs = ["{ws}:/workspace:ro"]

[agents.{agent}]
level = "standard"
approvals = "client"

[sandbox]
grant-fs = ["{ws}:/workspace:rw"]

[sandbox.git]
allow-hosts = ["{gateway}"]
insecure-http = true

[serve]
approval-timeout-secs = 60

[signers]
publishers = [{{ name = "warden-tests", key = "{key}" }}]
"#,
            fs = warden_test_artifacts::FS,
            search = warden_test_artifacts::SEARCH,
            ws = ws.display(),
            key = warden_test_artifacts::public_key_file().display(),
        ),
    )
    .unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/git_scenario.py");
    let output = Command::new(python())
        .arg(script)
        .args(["--warden", env!("CARGO_BIN_EXE_warden")])
        .arg("--config")
        .arg(&config)
        .arg("--state")
        .arg(&state)
        .arg("--site")
        .arg(&site)
        .args(["--gateway", &gateway.to_string()])
        .output()
        .expect("the Python client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the scenario failed:\n{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The session is in the audit chain, which verifies.
    let verified = warden(&["audit", "verify"], &state);
    assert_eq!(verified["ok"], true, "{verified}");
    let records = warden(&["audit", "export", "--json"], &state);
    let tools: Vec<String> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "outcome")
        .filter_map(|r| r["event"]["tool"].as_str().map(str::to_owned))
        .collect();
    // No rule names the server: its place on `allow-hosts` let the clone
    // run without asking.
    let clone = records
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["kind"] == "decision"
                && r["event"]["call"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("git_clone"))
        })
        .unwrap();
    assert_eq!(clone["event"]["decision"], "allow", "{clone}");
    assert_eq!(clone["event"]["layer"], "mode", "{clone}");
    assert!(
        clone["event"]["reason"]
            .as_str()
            .unwrap()
            .contains("allow-hosts"),
        "{clone}"
    );
    for tool in [
        "git_clone",
        "fs_write",
        "terminal_exec",
        "git_branch",
        "git_commit",
    ] {
        assert!(tools.iter().any(|t| t == tool), "{tool} audited: {tools:?}");
    }
    // The host removed its containers when it stopped.
    let left = docker.list_managed(&[(AGENT_LABEL, agent)]).await.unwrap();
    assert!(left.is_empty(), "containers left: {left:?}");
}
