//! The toolsmith's chain after the approval, through the real binary: an
//! approved blueprint is built (here: a prebuilt component), validated
//! through the gate in a shadow table, signed and activated, and real
//! MCP clients of both protocol generations see it arrive, call it, see
//! it superseded, rolled back and retired (`tests/mcp/toolsmith_client.py`,
//! the official Python SDK). Each way a validation fails ends `failed`
//! with its reason and nothing live; a host killed at any point comes
//! back with exactly the active tools live; the statements verify and
//! every move is on the audit chain, which verifies.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "tests fail loudly"
)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use support::Server;

#[path = "support/python.rs"]
mod python;

fn component() -> Vec<u8> {
    std::fs::read(warden_test_artifacts::GEN_WORDS).unwrap()
}

fn hex_sha256(bytes: &[u8]) -> String {
    let digest = warden_signing::sha256_digest(bytes);
    digest.trim_start_matches("sha256:").to_owned()
}

/// A config whose `[toolsmith.sandbox]` lets `gen_words_count` read
/// `data` (or nothing, with `fs = false`).
fn config(dir: &Path, fs: bool) -> (PathBuf, PathBuf) {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let fs = if fs {
        format!("fs = [{{ path = \"{}\", mode = \"ro\" }}]", data.display())
    } else {
        "fs = []".into()
    };
    let config = dir.join("warden.toml");
    std::fs::write(
        &config,
        format!(
            "[agents.alice]\nlevel = \"standard\"\n\n\
             [[serve.tokens]]\nagent = \"alice\"\ntoken = \"alice-token-0123456789\"\n\n\
             [toolsmith]\ncategory = \"analytics\"\nmax-blueprints-per-day = 50\n\n\
             [toolsmith.sandbox]\n{fs}\nnetwork = \"none\"\n\
             limits = {{ deadline-ms = 1000 }}\n\n\
             [toolsmith.capabilities.\"words:*\"]\naction-type = \"code:read\"\n"
        ),
    )
    .unwrap();
    (config, dir.join("state"))
}

fn blueprint(capability: &str, description: &str, cases: Value, output: Value) -> Value {
    let wasm = component();
    json!({
        "capability": capability,
        "title": "Count words",
        "description": description,
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "output_schema": output,
        "body": {"component": {
            "sha256": hex_sha256(&wasm),
            "base64": base64::engine::general_purpose::STANDARD.encode(&wasm),
        }},
        "cases": cases,
        "rationale": "asked for all week",
    })
}

fn good_cases() -> Value {
    json!([
        {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
        {"name": "one", "args": {"text": "a"}, "expect": {"ok": {"equals": {"words": 1}}}},
        {"name": "trap", "args": {"text": "trap"}, "expect": {"error": {}}}
    ])
}

fn counts() -> Value {
    json!({"type": "object", "properties": {"words": {"type": "integer", "minimum": 0}}, "required": ["words"]})
}

/// `warden toolsmith ARGS` against `state`; its JSON, or its error text.
fn toolsmith(args: &[&str], config: &Path, state: &Path) -> Result<Value, String> {
    let args: Vec<&str> = std::iter::once("toolsmith")
        .chain(args.iter().copied())
        .collect();
    match support::run(&args, config, state) {
        (true, stdout, _) => Ok(serde_json::from_str(&stdout).unwrap()),
        (false, stdout, stderr) => Err(format!("{stdout}{stderr}")),
    }
}

/// Proposes `blueprint` as operator `actor` and approves it; its id.
fn propose_and_approve(blueprint: &Value, actor: &str, config: &Path, state: &Path) -> u64 {
    let file = state.with_file_name(format!("blueprint-{actor}.json"));
    std::fs::write(&file, blueprint.to_string()).unwrap();
    let file = file.to_str().unwrap();
    let proposed = toolsmith(&["propose", file, "--actor", actor], config, state).unwrap();
    let id = proposed["id"].as_u64().unwrap();
    let id_text = id.to_string();
    let approve = [
        "approve",
        &id_text,
        "--actor",
        "dana",
        "--confirm",
        "--reason",
        "reviewed",
    ];
    toolsmith(&approve, config, state).unwrap();
    id
}

fn blueprints(config: &Path, state: &Path) -> Vec<Value> {
    toolsmith(&["blueprints"], config, state).unwrap()["blueprints"]
        .as_array()
        .unwrap()
        .clone()
}

/// Waits until no blueprint is on its way (approved, building,
/// validating, validated: a running host activates a validated one in
/// its next transaction, a killed one leaves it to be failed after the
/// lease); the list then.
fn settled(config: &Path, state: &Path) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let all = blueprints(config, state);
        let busy = all.iter().any(|b| {
            ["approved", "building", "validating", "validated"]
                .contains(&b["state"].as_str().unwrap())
        });
        if !busy {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "blueprints never settled: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn state_of(all: &[Value], id: u64) -> (String, String) {
    let b = all.iter().find(|b| b["id"] == id).unwrap();
    (
        b["state"].as_str().unwrap().to_owned(),
        b["reason"].as_str().unwrap_or("").to_owned(),
    )
}

fn audit_verifies(state: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", "verify", "--state-dir"])
        .arg(state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the audit chain verifies: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn generated_tools_go_live_for_real_clients_of_both_generations() {
    let python = python::python();
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = config(dir.path(), true);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/toolsmith_client.py");
    let output = Command::new(&python)
        .arg(script)
        .args(["--warden", env!("CARGO_BIN_EXE_warden")])
        .arg("--config")
        .arg(&config)
        .arg("--state")
        .arg(&state)
        .args(["--component", warden_test_artifacts::GEN_WORDS])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Every built version's statement verifies with the toolsmith key.
    let verified = toolsmith(&["verify"], &config, &state).unwrap();
    assert_eq!(verified["verified"], true, "{verified}");
    assert_eq!(
        verified["blueprints"].as_array().unwrap().len(),
        2,
        "{verified}"
    );
    // Every move is on the chain, the built ones with the component.
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["audit", "tail", "-n", "200", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let moves: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "blueprint-moved")
        .collect();
    let path: Vec<&str> = moves
        .iter()
        .filter(|m| m["event"]["id"] == 2)
        .map(|m| m["event"]["to"].as_str().unwrap())
        .collect();
    assert_eq!(
        path,
        [
            "pending",
            "approved",
            "building",
            "validating",
            "validated",
            "active",
            "superseded",
            "active",
            "retired"
        ],
        "{moves:#?}"
    );
    assert!(
        moves
            .iter()
            .filter(|m| m["event"]["id"] == 2 && m["event"]["to"] == "active")
            .all(|m| m["event"]["component_sha256"]
                == format!("sha256:{}", hex_sha256(&component()))),
        "{moves:#?}"
    );
    audit_verifies(&state);
}

#[test]
fn every_validation_failure_ends_failed_with_nothing_live() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = config(dir.path(), true);
    let server = Server::start(&config, &state);
    let mut wrong_digest = blueprint("words:count", "Bad digest.", good_cases(), counts());
    wrong_digest["body"]["component"]["sha256"] = json!("0".repeat(64));
    // Every case passes, but the request the tool exists for does not.
    let mut bad_witness = blueprint("words:count", "Fails its witness.", good_cases(), counts());
    bad_witness["witness"] = json!({"text": "trap"});
    let failing = [
        ("a-witness", bad_witness, "the witness"),
        (
            "a-trap",
            blueprint(
                "words:count",
                "Traps.",
                json!([
                    {"name": "trap", "args": {"text": "trap"}, "expect": {"ok": {}}},
                    {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
                    {"name": "err", "args": {"text": "trap"}, "expect": {"error": {}}}
                ]),
                counts(),
            ),
            "expected a result, got an error",
        ),
        (
            "a-limit",
            blueprint(
                "words:count",
                "Spins.",
                json!([
                    {"name": "spin", "args": {"text": "spin"}, "expect": {"ok": {}}},
                    {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
                    {"name": "err", "args": {"text": "trap"}, "expect": {"error": {}}}
                ]),
                counts(),
            ),
            // The deadline or the fuel, whichever runs out first.
            "finish",
        ),
        (
            "a-schema",
            blueprint(
                "words:count",
                "Negative.",
                json!([
                    {"name": "negative", "args": {"text": "negative"}, "expect": {"ok": {}}},
                    {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
                    {"name": "err", "args": {"text": "trap"}, "expect": {"error": {}}}
                ]),
                counts(),
            ),
            "outputSchema",
        ),
        (
            "a-wrong-case",
            blueprint(
                "words:count",
                "Miscounts.",
                json!([
                    {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 3}}}},
                    {"name": "one", "args": {"text": "a"}, "expect": {"ok": {}}},
                    {"name": "err", "args": {"text": "trap"}, "expect": {"error": {}}}
                ]),
                counts(),
            ),
            "expected {\"words\":3}",
        ),
        (
            "a-name",
            blueprint("words:total", "Another name.", good_cases(), counts()),
            "gen_words_total",
        ),
        ("a-digest", wrong_digest, "digest"),
    ];
    let mut ids = Vec::new();
    for (actor, bp, _) in &failing {
        ids.push(propose_and_approve(bp, actor, &config, &state));
    }
    let all = settled(&config, &state);
    for (id, (actor, _, words)) in ids.iter().zip(&failing) {
        let (state, reason) = state_of(&all, *id);
        assert_eq!(state, "failed", "{actor}: {reason}");
        assert!(reason.contains(words), "{actor}: `{words}` in {reason}");
    }
    let mut server = server;
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
    let listed = server.response(7).to_string();
    assert!(
        !listed.contains("gen_words"),
        "nothing generated is live: {listed}"
    );
    server.kill();

    // Asks beyond `[toolsmith.sandbox]`: the component reads files, the
    // grants now give none. It fails; nothing is narrowed.
    let (config, state) = self::config(dir.path(), false);
    let server = Server::start(&config, &state);
    let id = propose_and_approve(
        &blueprint("words:count", "Reads.", good_cases(), counts()),
        "a-grant",
        &config,
        &state,
    );
    let (got, reason) = state_of(&settled(&config, &state), id);
    assert_eq!(got, "failed");
    assert!(
        reason.contains("more than `[toolsmith.sandbox]`"),
        "{reason}"
    );
    server.kill();
    audit_verifies(&state);
}

#[test]
fn a_killed_host_comes_back_with_exactly_the_active_tools_live() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = config(dir.path(), true);
    for (round, delay) in [0u64, 60, 250, 900, 2500].into_iter().enumerate() {
        let server = Server::start(&config, &state);
        let description = format!("Version {round}.");
        propose_and_approve(
            &blueprint("words:count", &description, good_cases(), counts()),
            &format!("round-{round}"),
            &config,
            &state,
        );
        std::thread::sleep(Duration::from_millis(delay));
        server.kill();

        let mut server = Server::start(&config, &state);
        let all = settled(&config, &state);
        let active: Vec<&Value> = all.iter().filter(|b| b["state"] == "active").collect();
        assert!(active.len() <= 1, "{all:#?}");
        let stuck = all
            .iter()
            .filter(|b| b["state"] == "failed")
            .all(|b| b["reason"].as_str().unwrap().contains("interrupted"));
        assert!(stuck, "only interrupted builds failed: {all:#?}");
        // The live list follows the store within a reconciliation.
        let want = active
            .first()
            .map(|b| format!("Version {}.", b["id"].as_u64().unwrap() - 1));
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut id = 100;
        loop {
            id += 1;
            server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
            let tools = server.response(id)["result"]["tools"].clone();
            let live = tools
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "gen_words_count")
                .map(|t| t["description"].as_str().unwrap().to_owned());
            if live == want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: live {live:?}, active in the store {want:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server.kill();
    }

    // Retired through the admin API, with the guardrail: gone at once.
    let mut server = Server::start(&config, &state);
    let socket = state.join("admin.sock");
    let started = Instant::now();
    while listed(&mut server, 500).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the last version is live"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let retire = "/toolsmith/tools/gen_words_count/retire";
    let (status, refused) = support::admin(&socket, "POST", retire, Some(json!({"actor": "ops"})));
    assert_eq!(status, 400, "{refused}");
    let (status, verified) = support::admin(&socket, "GET", "/toolsmith/verify", None);
    assert_eq!(
        (status, &verified["verified"]),
        (200, &json!(true)),
        "{verified}"
    );
    let guard = json!({"actor": "ops", "confirm": true, "reason": "done with it"});
    let (status, moved) = support::admin(&socket, "POST", retire, Some(guard));
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["moved"][0]["state"], "retired", "{moved}");
    let started = Instant::now();
    while listed(&mut server, 600 + started.elapsed().as_millis() as u64).is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a retired tool leaves the list"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.kill();
    audit_verifies(&state);
}

/// `tools/list` of a stdio session: the description of
/// `gen_words_count`, if listed.
fn listed(server: &mut Server, id: u64) -> Option<String> {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    server.response(id)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "gen_words_count")
        .map(|t| t["description"].as_str().unwrap().to_owned())
}

#[test]
fn a_version_that_breaks_the_live_ones_cases_fails_and_tampered_bytes_never_load() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = config(dir.path(), true);
    let mut server = Server::start(&config, &state);
    let first = propose_and_approve(
        &blueprint("words:count", "Version one.", good_cases(), counts()),
        "v1",
        &config,
        &state,
    );
    assert_eq!(state_of(&settled(&config, &state), first).0, "active");

    // Version 2 takes only one-letter texts: its own cases pass, version
    // 1's ("a b") no longer do. The scorecard fails it; version 1 stays.
    let mut narrower = blueprint(
        "words:count",
        "Version two.",
        json!([
            {"name": "one", "args": {"text": "a"}, "expect": {"ok": {"equals": {"words": 1}}}},
            {"name": "none", "args": {"text": ""}, "expect": {"ok": {"equals": {"words": 0}}}},
            {"name": "trap", "args": {"text": "trap"}, "expect": {"error": {}}}
        ]),
        counts(),
    );
    narrower["input_schema"]["properties"]["text"]["maxLength"] = json!(1);
    let second = propose_and_approve(&narrower, "v2", &config, &state);
    let all = settled(&config, &state);
    let (got, reason) = state_of(&all, second);
    assert_eq!(got, "failed");
    assert!(
        reason.contains("scorecard") && reason.contains("`two`"),
        "{reason}"
    );
    assert_eq!(state_of(&all, first).0, "active");
    assert_eq!(listed(&mut server, 11).as_deref(), Some("Version one."));
    server.kill();

    // One byte of the stored component changed while the host was down:
    // it is not loaded, and `verify` says so.
    let python = python::python();
    let tamper = Command::new(&python)
        .args([
            "-c",
            "import sqlite3, sys\n\
             db = sqlite3.connect(sys.argv[1])\n\
             (blob,) = db.execute('SELECT component FROM blueprints WHERE id = 1').fetchone()\n\
             blob = bytes(blob[:-1]) + bytes([blob[-1] ^ 1])\n\
             db.execute('UPDATE blueprints SET component = ? WHERE id = 1', (blob,))\n\
             db.commit()\n",
        ])
        .arg(state.join("warden.db"))
        .status()
        .unwrap();
    assert!(tamper.success());
    let mut server = Server::start(&config, &state);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        listed(&mut server, 12),
        None,
        "tampered bytes are not served"
    );
    server.kill();
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["toolsmith", "verify", "--config"])
        .arg(&config)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    let verified: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!out.status.success(), "{verified}");
    assert_eq!(verified["verified"], false);
    assert!(
        verified["blueprints"][0]["problem"]
            .as_str()
            .unwrap()
            .contains("digest"),
        "{verified}"
    );
}

/// Waits until blueprint `id` is in one of `states`; its state and reason.
fn reaches(id: u64, states: &[&str], config: &Path, state: &Path) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (now, reason) = state_of(&blueprints(config, state), id);
        if states.contains(&now.as_str()) {
            return (now, reason);
        }
        assert!(
            Instant::now() < deadline,
            "blueprint {id} stayed {now}, never {states:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Hosts sharing a store (replicas, or the stdio servers of several
/// clients on one state directory): a host that starts while another
/// validates a blueprint leaves that work alone, whatever it finds in
/// the store; a host killed mid-way has its blueprint failed as
/// interrupted by the other once nobody has worked on it for the lease;
/// a host that shuts down fails its own at once.
#[test]
fn a_starting_host_never_fails_another_hosts_build() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = config(dir.path(), true);
    // Validation of a case that spins lasts the whole deadline.
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "limits = { deadline-ms = 1000 }",
        "limits = { deadline-ms = 8000, fuel = 1000000000000 }",
    );
    std::fs::write(&config, text).unwrap();
    let spins = |description: &str| {
        blueprint(
            "words:count",
            description,
            json!([
                {"name": "spin", "args": {"text": "spin"}, "expect": {"ok": {}}},
                {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
                {"name": "err", "args": {"text": "trap"}, "expect": {"error": {}}}
            ]),
            counts(),
        )
    };

    // The first host validates; a second one starts and runs its rounds.
    let first = Server::start(&config, &state);
    let id = propose_and_approve(&spins("Spins once."), "ops", &config, &state);
    reaches(id, &["validating"], &config, &state);
    let second = Server::start(&config, &state);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        state_of(&blueprints(&config, &state), id).0,
        "validating",
        "the second host left the first one's validation alone"
    );
    let (now, reason) = reaches(id, &["failed", "active"], &config, &state);
    assert_eq!(now, "failed");
    assert!(
        !reason.contains("interrupted") && reason.contains("finish"),
        "the first host's own validation ended it: {reason}"
    );
    second
        .close(Duration::from_secs(20))
        .expect("the second host stops");

    // The first host is killed while it validates; the second fails that
    // blueprint once its lease has run out, and not before.
    let id = propose_and_approve(&spins("Spins twice."), "ops", &config, &state);
    reaches(id, &["validating"], &config, &state);
    let second = Server::start(&config, &state);
    first.kill();
    let killed = Instant::now();
    let (now, reason) = reaches(id, &["failed"], &config, &state);
    assert!(
        reason.contains("interrupted") && reason.contains("no word from it"),
        "{now}: {reason}"
    );
    assert!(
        killed.elapsed() >= Duration::from_secs(10),
        "failed only once the lease ran out, after {:?}",
        killed.elapsed()
    );

    // The second host shuts down while it validates: failed at once.
    let id = propose_and_approve(&spins("Spins thrice."), "ops", &config, &state);
    reaches(id, &["validating"], &config, &state);
    second
        .close(Duration::from_secs(20))
        .expect("the second host stops");
    let (now, reason) = state_of(&blueprints(&config, &state), id);
    assert_eq!(now, "failed", "{reason}");
    assert!(reason.contains("the host shut down"), "{reason}");
    audit_verifies(&state);
}

/// `warden bench --toolsmith`: versions of a ten-case blueprint go live
/// on a served host, and each is measured from the audit chain and the
/// client's notice.
#[test]
fn the_toolsmith_bench_measures_validation_and_activation() {
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["bench", "--toolsmith", warden_test_artifacts::GEN_WORDS])
        .args(["--versions", "2"])
        .env("WARDEN_LOG", "error")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["versions"], 2, "{report}");
    assert_eq!(report["cases_per_blueprint"], 10, "{report}");
    for figure in ["validation_ms", "activation_to_list_changed_ms"] {
        assert_eq!(report[figure]["n"], 2, "{report}");
        let p50 = report[figure]["p50"].as_f64().unwrap();
        assert!((0.0..60_000.0).contains(&p50), "{figure}: {report}");
    }
    // An approval is picked up at the host's next round at the latest.
    let approval = report["approval_to_list_changed_ms"]["p50"]
        .as_f64()
        .unwrap();
    assert!(approval > 0.0, "{report}");
}
