//! Durable state through the real binary: capability grants requested
//! over MCP (automatic within bounds, a person otherwise), revoked by the
//! operator while the server runs, "always allow" rules that survive a
//! restart, and an audit chain that verifies.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use serde_json::{Value, json};
use support::{Server, approval_id, setup, text, warden};

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

fn write(server: &mut Server, id: u64, path: &str) -> Value {
    server.tool(id, "fs_write", json!({"path": path, "content": "x"}))
}

#[test]
fn capability_requests_are_granted_within_bounds_and_otherwise_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(
        dir.path(),
        "[capability-grants]\nauto-grant = [\"tool:fs_write\", \"category:web\"]\nmax-auto-ttl-secs = 600\nmax-ttl-secs = 1200\n",
    );
    let mut server = Server::start(&config, &state);
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
    let tools = server.response(1);
    assert!(
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "request_capability"),
        "{tools}"
    );

    // No grant: the write waits for a person, and the refusal says which
    // grant would allow it and how to ask.
    let before = write(&mut server, 2, "granted/a.txt");
    assert!(is_error(&before));
    assert!(text(&before).contains("request_capability"), "{before}");
    assert!(text(&before).contains("tool:fs_write"), "{before}");

    // Within bounds: granted at once.
    let granted = server.tool(
        3,
        "request_capability",
        json!({"capability": "tool:fs_write", "justification": "write the report", "ttl": 60,
               "boundary": {"paths": ["/workspace/granted"]}}),
    );
    assert!(!is_error(&granted), "{granted}");
    let grant = granted["structuredContent"]["granted"].clone();
    assert_eq!(grant["issuer"], "auto", "{granted}");
    let id = grant["id"].as_str().unwrap().to_owned();
    assert!(!is_error(&write(&mut server, 4, "granted/a.txt")));
    // Outside its boundary the grant does not apply.
    assert!(is_error(&write(&mut server, 5, "elsewhere.txt")));

    // Too long: a person decides.
    let long = server.tool(
        6,
        "request_capability",
        json!({"capability": "tool:fs_write", "justification": "the week", "ttl": 6000}),
    );
    assert!(
        text(&long).contains("approval_pending") || text(&long).contains("waiting"),
        "{long}"
    );
    assert!(text(&long).contains("capped at 1200 s"), "{long}");
    // A person approves it: granted for at most max-ttl-secs, in this
    // session only.
    warden(&["approvals", "approve", &approval_id(&long)], &state);
    let capped = server.tool(
        20,
        "request_capability",
        json!({"capability": "tool:fs_write", "justification": "the week", "ttl": 6000}),
    );
    let g = &capped["structuredContent"]["granted"];
    assert_eq!(g["issuer"], "person", "{capped}");
    let lasts = g["valid-to-ms"].as_u64().unwrap() - g["valid-from-ms"].as_u64().unwrap();
    assert_eq!(lasts, 1_200_000, "{capped}");
    assert!(
        g["session"].as_str().is_some_and(|s| s.starts_with("s-")),
        "{capped}"
    );
    warden(
        &[
            "grants",
            "revoke",
            g["id"].as_str().unwrap(),
            "--actor",
            "dana",
            "--confirm",
            "--reason",
            "only the cap was under test",
        ],
        &state,
    );

    // Requests no grant could serve are refused when made.
    let level = server.tool(
        21,
        "request_capability",
        json!({"capability": "level:elevated", "justification": "more", "ttl": 60}),
    );
    assert_eq!(
        warden_test_artifacts::error_envelope(&level)["domain_code"],
        "grant_not_possible",
        "{level}"
    );

    // High-risk even though the bounds list it: a person decides; the
    // retry after the approval gets the grant.
    let ask = json!({"capability": "category:web", "justification": "fetch the docs", "ttl": 60});
    let pending = server.tool(7, "request_capability", ask.clone());
    assert!(text(&pending).contains("network"), "{pending}");
    let approval = approval_id(&pending);
    warden(&["approvals", "approve", &approval], &state);
    let retried = server.tool(8, "request_capability", ask);
    assert!(!is_error(&retried), "{retried}");
    assert_eq!(retried["structuredContent"]["granted"]["issuer"], "person");

    // Revoking is destructive: without actor, confirmation and reason it
    // is refused and nothing changes.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["grants", "revoke", &id, "--state-dir"])
        .arg(&state)
        .env_remove("WARDEN_ACTOR")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("missing_confirm") && stderr.contains("missing_reason"),
        "{stderr}"
    );
    assert!(!is_error(&write(&mut server, 9, "granted/a2.txt")));
    // Revoked by the operator from another process: the running server
    // stops honouring it on the next call.
    warden(
        &[
            "grants",
            "revoke",
            &id,
            "--actor",
            "dana",
            "--confirm",
            "--reason",
            "the task is done",
        ],
        &state,
    );
    assert!(is_error(&write(&mut server, 10, "granted/b.txt")));
    let listed = warden(&["grants", "list", "--all"], &state);
    let status = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id.as_str())
        .map(|g| g["status"].clone());
    assert_eq!(status, Some(json!("revoked")));
    server.kill();

    let verified = warden(&["audit", "verify"], &state);
    assert_eq!(verified["ok"], true, "{verified}");
    let records = warden(&["audit", "export", "--json"], &state);
    let allowed_by_grant = records
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["kind"] == "decision" && r["event"]["grant"] == id.as_str());
    assert!(
        allowed_by_grant,
        "the decision names the grant that allowed it"
    );
    // Capability requests took the call path: each one decided (allow for
    // the automatic grant, ask for the one a person approved, deny for the
    // level) and ended, in the audit chain like any call.
    let requests: Vec<(String, String)> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["kind"] == "decision"
                && r["event"]["call"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("request_capability("))
        })
        .map(|r| {
            (
                r["event"]["call"].as_str().unwrap().to_owned(),
                r["event"]["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for expected in [
        ("request_capability(tool:fs_write)", "allow"),
        ("request_capability(tool:fs_write)", "ask"),
        ("request_capability(level:elevated)", "deny"),
        ("request_capability(category:web)", "ask"),
    ] {
        assert!(
            requests
                .iter()
                .any(|(c, d)| (c.as_str(), d.as_str()) == expected),
            "{expected:?} is audited: {requests:?}"
        );
    }
    let outcomes = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "outcome" && r["event"]["tool"] == "request_capability")
        .count();
    assert!(
        outcomes >= 6,
        "every capability request's outcome is audited: {outcomes}"
    );
    let revoked_by = records.as_array().unwrap().iter().find(|r| {
        r["kind"] == "grant" && r["event"]["action"] == "revoked" && r["event"]["id"] == id.as_str()
    });
    let by = &revoked_by.expect("the revocation is audited")["event"]["by"];
    assert_eq!(
        (&by["actor"], &by["confirm"], &by["reason"]),
        (&json!("dana"), &json!(true), &json!("the task is done")),
        "actor, confirmation and reason are audited"
    );
    let digests_only = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "decision")
        .all(|r| {
            r["event"].get("args").is_none()
                && r["event"]["args_digest"]
                    .as_str()
                    .unwrap()
                    .starts_with("sha256:")
        });
    assert!(
        digests_only,
        "arguments are kept as digests unless the operator opts in"
    );
}

#[test]
fn always_allow_rules_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(dir.path(), "[state]\naudit-args = true\n");
    let mut server = Server::start(&config, &state);
    let pending = write(&mut server, 1, "notes.txt");
    let id = approval_id(&pending);
    let listed = warden(&["approvals", "list"], &state);
    let rule = listed["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id.as_str())
        .map(|a| a["suggested_rule"].as_str().unwrap().to_owned())
        .unwrap();
    // A broader rule needs the guardrail; the suggested one does not.
    let broader = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "approvals",
            "approve",
            &id,
            "--always",
            "fs_write(/**)",
            "--state-dir",
        ])
        .arg(&state)
        .output()
        .unwrap();
    assert!(!broader.status.success());
    assert!(
        String::from_utf8_lossy(&broader.stderr).contains("missing_confirm"),
        "{}",
        String::from_utf8_lossy(&broader.stderr)
    );
    warden(&["approvals", "approve", &id, "--always", &rule], &state);
    assert!(!is_error(&write(&mut server, 2, "notes.txt")));
    server.kill();

    let mut server = Server::start(&config, &state);
    let again = write(&mut server, 3, "notes.txt");
    assert!(!is_error(&again), "the stored rule allows it: {again}");
    // Another file still asks.
    assert!(is_error(&write(&mut server, 4, "other.txt")));
    server.kill();

    let records = warden(&["audit", "export", "--json"], &state);
    let records = records.as_array().unwrap();
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "rule-added" && r["event"]["rule"] == rule.as_str())
    );
    // The operator opted in: decisions carry the arguments.
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "decision" && r["event"]["args"]["path"] == "notes.txt")
    );
    let tail = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", "tail", "-n", "2", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let lines = String::from_utf8(tail.stdout).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");
    let last: Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["seq"].as_u64(),
        records.last().unwrap()["seq"].as_u64()
    );
}

#[test]
fn trust_follows_outcomes_and_elevated_waits_for_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(
        dir.path(),
        "[progressive-trust]\nstrategy = \"weighted\"\ninitial-level = \"sandboxed\"\n\
         sandboxed-to-restricted = 0.3\nrestricted-to-standard = 0.5\nstandard-to-elevated = 0.6\n",
    );
    let mut server = Server::start(&config, &state);
    // Sandboxed by trust: web tools are out of reach, whatever the
    // configured level says.
    let fetch = json!({"url": "http://127.0.0.1:9/"});
    let before = server.tool(1, "http_fetch", fetch.clone());
    assert!(
        text(&before).contains("earned trust level `sandboxed`"),
        "{before}"
    );
    // Successful calls earn trust, one level per outcome.
    for id in 2..6 {
        let read = server.tool(id, "fs_read", json!({"path": "hello.txt"}));
        assert!(!is_error(&read), "{read}");
    }
    let after = server.tool(6, "http_fetch", fetch);
    assert!(!text(&after).contains("earned trust level"), "{after}");
    server.kill();

    let show = |state: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["trust", "show", "alice", "--config"])
            .arg(&config)
            .arg("--state-dir")
            .arg(state)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let shown = show(&state);
    assert_eq!(shown["level"], "standard", "{shown}");
    assert_eq!(shown["awaiting_person"]["to"], "elevated", "{shown}");

    // Only a person's approval makes it elevated.
    let approve = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "trust",
            "approve",
            "alice",
            "--actor",
            "dana",
            "--confirm",
            "--reason",
            "earned it",
            "--config",
        ])
        .arg(&config)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        approve.status.success(),
        "{}",
        String::from_utf8_lossy(&approve.stderr)
    );
    assert_eq!(show(&state)["level"], "elevated");
    let records = warden(&["audit", "export", "--json"], &state);
    let trust: Vec<&Value> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "trust")
        .collect();
    assert!(trust.iter().any(|r| r["event"]["to"] == "restricted"));
    assert!(
        trust
            .iter()
            .any(|r| r["event"]["to"] == "elevated (awaiting a person)")
    );
    assert!(trust.iter().any(|r| {
        r["event"]["reason"]
            .as_str()
            .unwrap()
            .contains("approved by a person")
    }));
    assert_eq!(warden(&["audit", "verify"], &state)["ok"], true);
}

#[test]
fn trust_and_grant_settings_are_checked_at_load() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, expected) in [
        (
            "[progressive-trust]\nstrategy = \"weighted\"\ninitial-level = \"elevated\"\n\
             sandboxed-to-restricted = 0.1\nrestricted-to-standard = 0.2\nstandard-to-elevated = 0.3\n",
            "progressive-trust.initial-level",
        ),
        (
            "[capability-grants]\nauto-grant = [\"fs_write\"]\n",
            "capability-grants.auto-grant[0]",
        ),
        (
            "[progressive-trust]\nstrategy = \"sometimes\"\n",
            "sometimes",
        ),
    ] {
        let (config, _) = setup(dir.path(), extra);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["config", "check"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra}: {stderr}");
        assert!(stderr.contains(expected), "{extra}: {stderr}");
    }
}
