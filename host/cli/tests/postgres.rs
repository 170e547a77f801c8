//! `warden serve` on a PostgreSQL store (`[state] url`), through the real
//! binary and a real server: rules added by "always allow" survive a
//! restart, a grant issued or revoked by the operator's CLI from another
//! process applies to the running server's next call, nothing is written
//! to `warden.db`, and the audit chain verifies.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use serde_json::{Value, json};
use support::{Server, approval_id, postgres_database, setup, warden_with};

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

fn write(server: &mut Server, id: u64, path: &str) -> Value {
    server.tool(id, "fs_write", json!({"path": path, "content": "x"}))
}

#[test]
fn a_host_on_postgres_keeps_rules_grants_and_a_verifiable_audit_chain() {
    let url = postgres_database();
    let env = [("WARDEN_STATE_URL", url.as_str())];
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(
        dir.path(),
        &format!("[state]\nurl = \"{url}\"\naudit-args = true\n"),
    );
    let cli = |args: &[&str]| warden_with(args, &state, &env);

    let mut server = Server::start(&config, &state);
    let pending = write(&mut server, 1, "notes.txt");
    let id = approval_id(&pending);
    let listed = cli(&["approvals", "list"]);
    let rule = listed["pending"][0]["suggested_rule"]
        .as_str()
        .unwrap()
        .to_owned();
    cli(&["approvals", "approve", &id, "--always", &rule]);
    assert!(!is_error(&write(&mut server, 2, "notes.txt")));

    // A grant issued by the operator in another process applies to the
    // next call of the running server; revoked, it stops applying.
    assert!(is_error(&write(&mut server, 3, "granted/a.txt")));
    let issued = cli(&[
        "grants",
        "issue",
        "--agent",
        "alice",
        "--capability",
        "tool:fs_write",
        "--goal",
        "the report",
        "--ttl",
        "600",
        "--path",
        "/workspace/granted",
        "--actor",
        "dana",
        "--confirm",
        "--reason",
        "the report needs it",
    ]);
    let grant = issued["id"].as_str().unwrap().to_owned();
    assert!(
        !is_error(&write(&mut server, 4, "granted/a.txt")),
        "the grant applies"
    );
    cli(&[
        "grants",
        "revoke",
        &grant,
        "--actor",
        "dana",
        "--confirm",
        "--reason",
        "done",
    ]);
    assert!(is_error(&write(&mut server, 5, "granted/b.txt")), "revoked");
    server.kill();

    assert!(
        !state.join("warden.db").exists(),
        "the state is in PostgreSQL, not in the state directory"
    );
    let mut server = Server::start(&config, &state);
    let again = write(&mut server, 6, "notes.txt");
    assert!(!is_error(&again), "the stored rule allows it: {again}");
    server.kill();

    let verified = cli(&["audit", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    let records = cli(&["audit", "export", "--json"]);
    let kinds: Vec<&str> = records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    for kind in ["decision", "approval", "rule-added", "grant", "outcome"] {
        assert!(kinds.contains(&kind), "{kind} is audited: {kinds:?}");
    }
    let listed = cli(&["grants", "list", "--all"]);
    assert_eq!(listed[0]["status"], "revoked", "{listed}");
}

/// Two replicas, each with its own state directory and host key, on one
/// database with one shared key: a person answers through replica B an
/// ask made on replica A, the agent's retry on B runs on that answer, and
/// a replay of the retry on A does not.
#[test]
fn replicas_share_approvals_through_the_database() {
    let url = postgres_database();
    let dir = tempfile::tempdir().unwrap();
    let (config, state_a) = setup(
        dir.path(),
        &format!("[state]\nurl = \"{url}\"\nshared-key = \"shared.key\"\n"),
    );
    let state_b = dir.path().join("state-b");
    let env = [("WARDEN_STATE_URL", url.as_str())];
    let mut a = Server::start(&config, &state_a);
    let mut b = Server::start(&config, &state_b);
    assert!(
        std::fs::read(state_a.join("host.key")).unwrap()
            != std::fs::read(state_b.join("host.key")).unwrap(),
        "each replica has a host key of its own"
    );

    let pending = write(&mut a, 1, "notes.txt");
    let id = approval_id(&pending);
    // B lists and answers the ask it never saw.
    let listed = warden_with(&["approvals", "list"], &state_b, &env);
    assert_eq!(listed["pending"][0]["id"], id.as_str(), "{listed}");
    warden_with(&["approvals", "approve", &id], &state_b, &env);
    let retried = write(&mut b, 2, "notes.txt");
    assert!(!is_error(&retried), "the retry on B runs: {retried}");
    let replay = write(&mut a, 3, "notes.txt");
    assert!(is_error(&replay), "the answer was used once: {replay}");
    a.kill();
    b.kill();
}

/// Trust is one state per agent across replicas: an agent demoted by its
/// failures on replica A is demoted on replica B at its next call, though
/// B held the agent's earlier, higher level in memory. (Otherwise an
/// agent fails on one replica and acts on another.)
#[test]
fn an_agent_demoted_on_one_replica_is_demoted_on_every_replica() {
    let url = postgres_database();
    let dir = tempfile::tempdir().unwrap();
    let (config, state_a) = setup(
        dir.path(),
        &format!(
            "[state]\nurl = \"{url}\"\nshared-key = \"shared.key\"\n\
             [progressive-trust]\nstrategy = \"weighted\"\ninitial-level = \"sandboxed\"\n\
             sandboxed-to-restricted = 0.3\nrestricted-to-standard = 0.5\n\
             standard-to-elevated = 0.6\n"
        ),
    );
    let state_b = dir.path().join("state-b");
    let mut a = Server::start(&config, &state_a);
    let mut b = Server::start(&config, &state_b);
    let fetch = json!({"url": "http://127.0.0.1:9/"});
    let refused_by_trust = |r: &Value| support::text(r).contains("earned trust level");

    // Earned on A, seen on B.
    for id in 1..5 {
        let read = a.tool(id, "fs_read", json!({"path": "hello.txt"}));
        assert!(!is_error(&read), "{read}");
    }
    let on_b = b.tool(10, "http_fetch", fetch.clone());
    assert!(
        !refused_by_trust(&on_b),
        "B sees the level earned on A: {on_b}"
    );

    // Failures on A demote the agent; B, which held the higher level,
    // applies the demotion to the very next call.
    let mut demoted = false;
    for id in 20..60 {
        let failed = a.tool(id, "fs_read", json!({"path": "no-such-file.txt"}));
        assert!(is_error(&failed), "{failed}");
        if refused_by_trust(&a.tool(id + 100, "http_fetch", fetch.clone())) {
            demoted = true;
            break;
        }
    }
    assert!(demoted, "failures demote the agent on A");
    let on_b = b.tool(11, "http_fetch", fetch);
    assert!(
        refused_by_trust(&on_b),
        "the demotion applies on B too: {on_b}"
    );
    a.kill();
    b.kill();
}
