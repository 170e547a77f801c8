//! Network and environment grants through the `warden` binary: a secret
//! granted to a call never reaches the host's logs or output, and
//! `warden plugin inspect` shows where requests and grants differ.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::process::{Command, Output};

const SECRET: &str = "s3cr3t-7f1e9c2a";

/// Every test shares one compile cache, so the probe is compiled once.
fn state_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("warden-cli-grants-state")
}

fn warden(args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .env("WARDEN_STATE_DIR", state_dir())
        .env("WARDEN_SIGNERS", warden_test_artifacts::signers_file())
        // Everything Warden itself logs, at every level.
        .env(
            "WARDEN_LOG",
            "warden=trace,warden_runtime=trace,warden_gate=trace,info",
        )
        .envs(envs.iter().copied())
        .output()
        .expect("warden runs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_granted_secret_never_shows_in_logs_or_output() {
    let literal = format!("PROBE_TOKEN={SECRET}");
    let from_host = ("PROBE_TOKEN", SECRET);
    for (grant, envs) in [(literal.as_str(), vec![]), ("PROBE_TOKEN", vec![from_host])] {
        let out = warden(
            &[
                "call",
                "probe_run",
                "--plugin",
                warden_test_artifacts::PROBE,
                "--allow",
                "probe_run",
                "--grant-env",
                grant,
                "--grant-env",
                "OTHER=also-secret",
                "--args",
                r#"{"action": "env-keys"}"#,
            ],
            &envs,
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(stdout.contains(r#""detail":"PROBE_TOKEN""#), "{stdout}");
        assert!(
            stderr.contains("env_not_requested"),
            "the gap is logged: {stderr}"
        );
        assert!(!stderr.is_empty(), "trace logging is on");
        for secret in [SECRET, "also-secret"] {
            assert!(!stdout.contains(secret), "{stdout}");
            assert!(!stderr.contains(secret), "{stderr}");
        }
    }
}

#[test]
fn a_bad_env_grant_fails_without_echoing_its_value() {
    let out = warden(
        &[
            "call",
            "probe_run",
            "--plugin",
            warden_test_artifacts::PROBE,
            "--grant-env",
            &format!("BAD-KEY={SECRET}"),
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not an environment variable name"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(SECRET) && !stdout.contains(SECRET),
        "{stderr}"
    );
}

#[test]
fn inspect_shows_the_difference_between_requests_and_grants() {
    let out = warden(
        &[
            "plugin",
            "inspect",
            warden_test_artifacts::PROBE,
            "--grant-net",
            "api.example.com:443",
            "--grant-env",
            &format!("PROBE_TOKEN={SECRET}"),
            "--grant-env",
            "HOME=/root",
        ],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("network: insecure:allow-all"), "{stdout}");
    assert!(stdout.contains("env: PROBE_TOKEN, PROBE_MODE"), "{stdout}");
    assert!(
        stdout.contains("requested, not granted: network: insecure:allow-all"),
        "{stdout}"
    );
    assert!(
        stdout.contains("requested, not granted: env: PROBE_MODE"),
        "{stdout}"
    );
    assert!(
        stdout.contains("granted, not requested: env: HOME"),
        "{stdout}"
    );
    assert!(!stdout.contains(SECRET), "{stdout}");

    let out = warden(
        &[
            "plugin",
            "inspect",
            "--json",
            warden_test_artifacts::HTTP,
            "--grant-net",
            "insecure:allow-all",
        ],
        &[],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["manifest"]["capabilities"]["network"],
        serde_json::json!(["insecure:allow-all"])
    );
    assert_eq!(v["grant-gap"]["network-not-granted"], serde_json::json!([]));
}
