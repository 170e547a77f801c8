//! The toolsmith's blueprints and the `tool:create` approval through the
//! real binary, from the attacker's side: an autonomous agent whose rules
//! allow everything proposes a tool, tries to widen it and to name it,
//! tries to approve it itself; only an operator's approval moves it, that
//! approval is bound to the digests and voided by a change; every move is
//! in the audit chain, which verifies.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::{Server, admin, run, setup, text, warden};

const TOOLSMITH: &str = "\
[rules]
allow = [\"*\"]

[toolsmith]
enabled = true
category = \"analytics\"
[toolsmith.sandbox]
fs = [{ path = \"data\", mode = \"ro\" }]
network = \"none\"
[toolsmith.capabilities.\"words:*\"]
action-type = \"code:read\"
";

fn blueprint() -> Value {
    json!({
        "capability": "words:count",
        "title": "Count words",
        "description": "Counts the words of a text.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "output_schema": {"type": "object", "properties": {"words": {"type": "integer"}}},
        "body": {"rust": {"lib_rs": "use warden_sdk::tool;\n// counts words\n"}},
        "cases": [
            {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
            {"name": "none", "args": {"text": ""}, "expect": {"ok": {"fields": [{"pointer": "/words", "equals": 0}]}}},
            {"name": "missing", "args": {}, "expect": {"error": {"contains": "text"}}}
        ],
        "rationale": "Agents asked for word counts."
    })
}

/// `warden serve --stdio` for alice in autonomous mode.
fn autonomous(config: &Path, state: &Path) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
    command
        .args([
            "serve",
            "--stdio",
            "--agent",
            "alice",
            "--mode",
            "autonomous",
        ])
        .arg("--config")
        .arg(config)
        .arg("--state-dir")
        .arg(state);
    Server::spawn(command)
}

fn ok(args: &[&str], config: &Path, state: &Path) -> Value {
    let (success, out, err) = run(args, config, state);
    assert!(success, "warden {args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

fn structured(reply: &Value) -> Value {
    serde_json::from_str(&text(reply)).unwrap_or(Value::Null)
}

#[test]
fn an_autonomous_agent_proposes_and_only_an_operator_approves() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(dir.path(), TOOLSMITH);
    let mut agent = autonomous(&config, &state);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let listed = agent.response(1);
    let names: Vec<_> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"toolsmith_propose".to_owned()), "{names:?}");

    // The author tries to choose what the host derives.
    for (key, value) in [
        ("name", json!("fs_read")),
        (
            "sandbox",
            json!({"network": {"allow": ["evil.example:443"]}}),
        ),
        ("category", json!("file-system")),
    ] {
        let mut widened = blueprint();
        widened[key] = value;
        let reply = agent.tool(2, "toolsmith_propose", json!({"blueprint": widened}));
        assert_eq!(reply["isError"], true, "{key}: {reply}");
        assert!(text(&reply).contains("unknown field"), "{key}: {reply}");
    }
    let reply = agent.tool(
        3,
        "toolsmith_propose",
        json!({"blueprint": blueprint(), "grants": {"network": "any"}}),
    );
    assert_eq!(reply["isError"], true, "{reply}");

    // A good one is kept, pending, though every rule allows everything.
    let reply = agent.tool(4, "toolsmith_propose", json!({"blueprint": blueprint()}));
    assert_eq!(reply["isError"], false, "{reply}");
    let proposed = structured(&reply);
    assert_eq!(proposed["state"], "pending", "{reply}");
    assert_eq!(proposed["name"], "gen_words_count");
    let id = proposed["id"].as_u64().unwrap().to_string();
    agent.kill();

    // What the operator sees: derived facts, grants in words, source, cases.
    let shown = ok(&["toolsmith", "show", &id], &config, &state);
    assert_eq!(shown["derived"]["name"], "gen_words_count");
    assert_eq!(shown["derived"]["category"], "analytics");
    assert_eq!(shown["derived"]["action_type"], "code:read");
    assert_eq!(shown["derived"]["side_effect"], false);
    assert_eq!(shown["author"], "agent:alice");
    let words = shown["grants_in_words"].to_string();
    assert!(words.contains("reads files under `data`"), "{words}");
    assert!(words.contains("no network"), "{words}");
    assert!(
        shown["blueprint"]["body"]["rust"]["lib_rs"]
            .as_str()
            .unwrap()
            .contains("counts words")
    );
    assert_eq!(shown["blueprint"]["cases"].as_array().unwrap().len(), 3);
    let digest = shown["binding"]["blueprint"].as_str().unwrap().to_owned();
    assert!(digest.starts_with("sha256:"), "{shown}");

    // Approving needs the guardrail, and the digest the person saw.
    let (approved, _, err) = run(&["toolsmith", "approve", &id], &config, &state);
    assert!(!approved && err.contains("missing_confirm"), "{err}");
    let guard = ["--actor", "ops", "--confirm", "--reason", "useful"];
    let mut wrong = vec!["toolsmith", "approve", &id, "--digest", "sha256:00"];
    wrong.extend(guard);
    let (approved, _, err) = run(&wrong, &config, &state);
    assert!(
        !approved && err.contains("not the blueprint you saw"),
        "{err}"
    );
    let mut approve = vec!["toolsmith", "approve", &id, "--digest", &digest];
    approve.extend(guard);
    let answer = ok(&approve, &config, &state);
    assert_eq!(answer["state"], "approved", "{answer}");
    assert_eq!(answer["approval"]["blueprint"], digest.as_str());
    // A second answer finds it moved.
    let mut reject = vec!["toolsmith", "reject", &id];
    reject.extend(guard);
    let rejected = ok(&reject, &config, &state);
    assert_eq!(
        rejected["state"], "rejected",
        "approved, not built: still refusable"
    );
    let (again, _, err) = run(&approve, &config, &state);
    assert!(!again && err.contains("cannot move from rejected"), "{err}");

    // Every move is one record with the digests, and the chain verifies.
    let records = warden(&["audit", "export", "--json"], &state);
    let moves: Vec<_> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "blueprint-moved")
        .map(|r| r["event"].clone())
        .collect();
    let path: Vec<_> = moves.iter().map(|m| m["to"].as_str().unwrap()).collect();
    assert_eq!(path, ["pending", "approved", "rejected"], "{moves:?}");
    assert!(
        moves
            .iter()
            .all(|m| m["blueprint_sha256"] == digest.as_str())
    );
    assert!(
        moves[1]["builder_sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        moves[1]["grants_sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(moves[1]["actor"], "operator:ops");
    assert_eq!(warden(&["audit", "verify"], &state)["ok"], true);
}

/// An operator proposes the test blueprint and approves it (guarded):
/// the config, the state directory and the blueprint's id.
fn proposed_and_approved(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let (config, state) = setup(dir, TOOLSMITH);
    let file = dir.join("blueprint.json");
    std::fs::write(&file, blueprint().to_string()).unwrap();
    let propose = [
        "toolsmith",
        "propose",
        file.to_str().unwrap(),
        "--actor",
        "ops",
    ];
    let id = ok(&propose, &config, &state)["id"]
        .as_u64()
        .unwrap()
        .to_string();
    let mut approve = vec!["toolsmith", "approve", id.as_str()];
    approve.extend(["--actor", "ops", "--confirm", "--reason", "useful"]);
    ok(&approve, &config, &state);
    (config, state, id)
}

#[test]
fn wider_grants_since_void_the_approval() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state, id) = proposed_and_approved(dir.path());
    let shown = ok(&["toolsmith", "show", &id], &config, &state);
    assert_eq!(shown["changed_since_approval"], json!([]));

    // The operator's config now grants the network: the approval no
    // longer covers what would be built.
    let wider = std::fs::read_to_string(&config).unwrap().replace(
        "network = \"none\"",
        "network = { allow = [\"api.example.com:443\"] }",
    );
    std::fs::write(&config, wider).unwrap();
    let shown = ok(&["toolsmith", "show", &id], &config, &state);
    assert_eq!(
        shown["changed_since_approval"],
        json!(["the grants"]),
        "{shown}"
    );
    assert_eq!(shown["derived"]["side_effect"], true);
}

/// One byte of the stored blueprint changes after the approval (anyone
/// with write access to the database): the approval no longer applies.
#[test]
fn an_edited_blueprint_voids_the_approval() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state, id) = proposed_and_approved(dir.path());
    let edit = "import sqlite3, sys\n\
        db = sqlite3.connect(sys.argv[1])\n\
        db.execute(\"UPDATE blueprints SET blueprint = replace(blueprint, 'counts words', 'counts wordz')\")\n\
        db.commit()\n";
    let status = Command::new("python3")
        .args(["-c", edit])
        .arg(state.join("warden.db"))
        .status()
        .unwrap();
    assert!(status.success());
    let shown = ok(&["toolsmith", "show", &id], &config, &state);
    assert!(
        shown["blueprint"]["body"]["rust"]["lib_rs"]
            .as_str()
            .unwrap()
            .contains("wordz")
    );
    assert_eq!(
        shown["changed_since_approval"],
        json!(["the blueprint"]),
        "{shown}"
    );
}

#[test]
fn an_always_allow_rule_for_proposals_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = setup(dir.path(), "[rules]\nallow = [\"toolsmith_propose\"]\n");
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["config", "check"])
        .arg(&config)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("tool:create"), "{said}");
}

#[test]
fn without_the_toolsmith_enabled_agents_cannot_propose() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(dir.path(), "");
    let mut agent = autonomous(&config, &state);
    let reply = agent.tool(1, "toolsmith_propose", json!({"blueprint": blueprint()}));
    assert_eq!(reply["isError"], true, "{reply}");
    agent.kill();
    let listed = ok(&["toolsmith", "blueprints"], &config, &state);
    assert_eq!(listed["blueprints"], json!([]));
}

#[test]
fn operators_answer_blueprints_through_the_admin_api() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(dir.path(), TOOLSMITH);
    let mut agent = autonomous(&config, &state);
    let reply = agent.tool(1, "toolsmith_propose", json!({"blueprint": blueprint()}));
    let id = structured(&reply)["id"].as_u64().unwrap();
    let socket = state.join("admin.sock");
    let started = std::time::Instant::now();
    while !socket.exists() {
        assert!(started.elapsed().as_secs() < 30, "the admin socket appears");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (status, listed) = admin(&socket, "GET", "/toolsmith/blueprints", None);
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["blueprints"][0]["state"], "pending");
    let (status, shown) = admin(&socket, "GET", &format!("/toolsmith/blueprints/{id}"), None);
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["derived"]["name"], "gen_words_count");
    let approve = format!("/toolsmith/blueprints/{id}/approve");
    let (status, refused) = admin(&socket, "POST", &approve, Some(json!({"actor": "ops"})));
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["code"], "guardrail_violated");
    let guard = json!({"actor": "ops", "confirm": true, "reason": "useful",
        "digest": shown["binding"]["blueprint"]});
    let (status, approved) = admin(&socket, "POST", &approve, Some(guard.clone()));
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["state"], "approved");
    let (status, again) = admin(&socket, "POST", &approve, Some(guard));
    assert_eq!(status, 409, "{again}");
    agent.kill();
}
