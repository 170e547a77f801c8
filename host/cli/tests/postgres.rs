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
use support::bridged::list_changed_within;
use support::{Server, approval_id, postgres_database, setup, warden_with};

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

fn write(server: &mut Server, id: u64, path: &str) -> Value {
    server.tool(id, "fs_write", json!({"path": path, "content": "x"}))
}

/// Two replicas of one deployment: a new database, one shared key, the
/// test workspace's config with `extra` TOML after `[state]`, and a state
/// directory (so a host key) for each.
struct Pair {
    dir: tempfile::TempDir,
    url: String,
    config: std::path::PathBuf,
    state_a: std::path::PathBuf,
    state_b: std::path::PathBuf,
}

fn pair(extra: &str) -> Pair {
    let url = postgres_database();
    let dir = tempfile::tempdir().unwrap();
    let (config, state_a) = setup(
        dir.path(),
        &format!("[state]\nurl = \"{url}\"\nshared-key = \"shared.key\"\n{extra}"),
    );
    let state_b = dir.path().join("state-b");
    Pair {
        dir,
        url,
        config,
        state_a,
        state_b,
    }
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
    let Pair {
        dir: _dir,
        url,
        config,
        state_a,
        state_b,
    } = pair("");
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
    let Pair {
        dir: _dir,
        config,
        state_a,
        state_b,
        ..
    } = pair(
        "[progressive-trust]\nstrategy = \"weighted\"\ninitial-level = \"sandboxed\"\n\
         sandboxed-to-restricted = 0.3\nrestricted-to-standard = 0.5\n\
         standard-to-elevated = 0.6\n",
    );
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

/// The tools an MCP `tools/list` gives (request id `id`).
fn tools(server: &mut Server, id: u64) -> Vec<String> {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}));
    server.response(id)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs `sql` on the database at `url` with `psql`, as someone who can
/// write to it directly.
fn psql(url: &str, sql: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("psql")
        .args(["-v", "ON_ERROR_STOP=1", "-q", url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "psql failed");
}

/// A plugin an operator installs through replica A reaches replica B's
/// clients (told by `tools/list_changed`) and runs there, admitted by B's
/// own signers; removed through A's state directory, it leaves B too. A component written
/// straight into the shared database without a trusted signature never
/// loads on B.
#[test]
fn plugin_installs_and_removals_reach_every_replica() {
    let Pair {
        dir,
        url,
        config,
        state_a,
        state_b,
    } = pair("");
    let env = [("WARDEN_STATE_URL", url.as_str())];
    let mut a = Server::start(&config, &state_a);
    let log_b = dir.path().join("b.log");
    let mut b = Server::start_logging(&config, &state_b, &log_b);
    assert!(!tools(&mut b, 1).iter().any(|t| t == "json_query"));

    // Written straight into the database: a component whose bytes its
    // signature does not cover. No replica loads it.
    let mut component = std::fs::read(warden_test_artifacts::JSON).unwrap();
    let middle = component.len() / 2;
    component[middle] ^= 0x55;
    let signature =
        std::fs::read_to_string(format!("{}.sig", warden_test_artifacts::JSON)).unwrap();
    let hex: String = component.iter().map(|b| format!("{b:02x}")).collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    psql(
        &url,
        &format!(
            "INSERT INTO plugins (name, digest, record, component, signature, at_ms) \
             VALUES ('json', 'sha256:forged', 'null', decode('{hex}', 'hex'), '{}', {now})",
            signature.replace('\'', "''")
        ),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&log_b)
        .unwrap()
        .contains("was refused here")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "B never tried the forged plugin: {}",
            std::fs::read_to_string(&log_b).unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!tools(&mut b, 20).iter().any(|t| t == "json_query"));
    assert!(!tools(&mut a, 21).iter().any(|t| t == "json_query"));
    // The operator's install below is a later change than the forgery.
    std::thread::sleep(std::time::Duration::from_millis(1000));

    let cfg = config.to_str().unwrap();
    warden_with(
        &[
            "plugin",
            "install",
            warden_test_artifacts::JSON,
            "--config",
            cfg,
        ],
        &state_a,
        &env,
    );
    assert!(tools(&mut a, 2).iter().any(|t| t == "json_query"));
    assert!(list_changed_within(&b, std::time::Duration::from_secs(30)));
    assert!(tools(&mut b, 3).iter().any(|t| t == "json_query"));
    let ran = b.tool(4, "json_query", json!({"filter": ".a", "input": {"a": 42}}));
    assert!(!is_error(&ran), "{ran}");
    assert!(support::text(&ran).contains("42"), "{ran}");

    // Removed through A's state directory with A stopped (the CLI works
    // on the registry and the store directly): B drops it too, and A
    // does not bring it back when it starts.
    a.kill();
    warden_with(
        &[
            "plugin",
            "remove",
            "json",
            "--config",
            cfg,
            "--actor",
            "dana",
            "--confirm",
            "--reason",
            "not needed",
        ],
        &state_a,
        &env,
    );
    assert!(list_changed_within(&b, std::time::Duration::from_secs(30)));
    assert!(!tools(&mut b, 5).iter().any(|t| t == "json_query"));
    let mut a = Server::start(&config, &state_a);
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(!tools(&mut a, 6).iter().any(|t| t == "json_query"));
    assert!(!tools(&mut b, 7).iter().any(|t| t == "json_query"));
    a.kill();
    b.kill();
}

/// A rule a person added by answering "always allow" through one replica
/// applies on the others while they run (within a few seconds), not only
/// after their restart.
#[test]
fn an_always_allow_rule_reaches_running_replicas() {
    let Pair {
        dir: _dir,
        url,
        config,
        state_a,
        state_b,
    } = pair("");
    let env = [("WARDEN_STATE_URL", url.as_str())];
    let mut a = Server::start(&config, &state_a);
    let mut b = Server::start(&config, &state_b);
    // B has asked for this call before the rule exists.
    assert!(is_error(&write(&mut b, 1, "notes.txt")));
    let pending = write(&mut a, 2, "notes.txt");
    let id = approval_id(&pending);
    let listed = warden_with(&["approvals", "list"], &state_a, &env);
    let rule = listed["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id.as_str())
        .unwrap()["suggested_rule"]
        .as_str()
        .unwrap()
        .to_owned();
    warden_with(
        &["approvals", "approve", &id, "--always", &rule],
        &state_a,
        &env,
    );
    assert!(!is_error(&write(&mut a, 3, "notes.txt")));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut n = 10;
    loop {
        let on_b = write(&mut b, n, "notes.txt");
        if !is_error(&on_b) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rule never applied on B: {on_b}"
        );
        n += 1;
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    a.kill();
    b.kill();
}

/// An operator's approval of a bridged server's tools, and its
/// revocation, given through replica A reach replica B while it runs: B
/// publishes the approved tools (telling its client), and refuses a
/// revoked one from the very next call, without a restart or a change
/// upstream.
#[test]
fn bridge_approvals_and_revocations_reach_every_replica() {
    use support::bridged::{Bridged, envelope, fixture_binary, fx_names, list_changed_within};
    let url = postgres_database();
    let b = Bridged::with(&format!(
        "[[bridge]]\nname = \"fx\"\ncommand = [\"{}\"]\nruntime = \"host\"\n\
         insecure-host-process = true\ncategory = \"external-data\"\n\
         default-decision = \"allow\"\nread-only = [\"*\"]\n\
         env = {{ FIXTURE_LOG = \"{{log}}\" }}\n\n\
         [state]\nurl = \"{url}\"\nshared-key = \"shared.key\"\n",
        fixture_binary().display()
    ));
    let mut a = b.serve();
    b.listed();
    let state_b = b.dir.join("state-b");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_warden"));
    command
        .args(["serve", "--stdio", "--agent", "alice", "--config"])
        .arg(&b.config)
        .arg("--state-dir")
        .arg(&state_b);
    let mut on_b = Server::spawn(command);
    assert!(fx_names(&mut a, 1).is_empty());
    assert!(fx_names(&mut on_b, 1).is_empty());

    let out = b.bridge(&["approve", "fx", "--reason", "reviewed"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        list_changed_within(&a, std::time::Duration::from_secs(5)),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        b.status()
    );
    assert!(
        list_changed_within(&on_b, std::time::Duration::from_secs(10)),
        "B never published what A's operator approved"
    );
    assert!(fx_names(&mut on_b, 2).contains(&"fx_echo".to_owned()));
    let echoed = on_b.tool(3, "fx_echo", json!({"text": "hi"}));
    assert_eq!(echoed["content"][0]["text"], "hi", "{echoed}");

    let out = b.bridge(&[
        "revoke",
        "fx",
        "fx_echo",
        "--confirm",
        "--reason",
        "withdrawn",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The very next call on B is refused: B checks the pin in the store
    // before a bridged call runs, not only when it re-judges its listing.
    let refused = envelope(&on_b.tool(10, "fx_echo", json!({"text": "hi"})));
    assert_eq!(refused["domain_code"], "not_approved", "{refused}");
    assert!(
        list_changed_within(&on_b, std::time::Duration::from_secs(10)),
        "B's client is told its list changed"
    );
    assert!(!fx_names(&mut on_b, 99).contains(&"fx_echo".to_owned()));
    a.kill();
    on_b.kill();
}
