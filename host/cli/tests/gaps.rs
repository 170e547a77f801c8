//! The toolsmith's gap log through the real binary: calls to tools that
//! do not exist and capability requests for them, from two sessions,
//! make a recurring gap that `warden toolsmith gaps` lists and the audit
//! chain records once; a name that is no capability is not recorded.
//! A configured author command writes up a gap that becomes recurring,
//! as a proposal waiting for a person, and is held to its deadline.
//! With `author-sampling`, the client whose call made a gap recurring is
//! asked through MCP sampling, on both protocol generations, and an
//! agent cannot pass its own text off as its model's answer
//! (`tests/mcp/sampling_client.py`, the official Python SDK).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

#[path = "support/python.rs"]
mod python;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Server, setup, text, warden};

#[test]
fn unknown_tools_asked_for_from_two_sessions_become_a_recurring_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(
        dir.path(),
        "[toolsmith]\ngap-threshold = 3\ngap-min-sessions = 2\n",
    );
    let mut first = Server::start(&config, &state);
    for (id, name) in [
        (1, "weather_forecast"),
        (2, "weather_forecast"),
        (3, "x y\u{202e}"),
    ] {
        let reply = first.tool(id, name, json!({}));
        assert_eq!(reply["isError"], true, "{reply}");
        assert!(text(&reply).contains("no tool named"), "{reply}");
    }
    let asked = first.tool(
        4,
        "request_capability",
        json!({"capability": "tool:pdf_render", "justification": "render the report", "ttl": 60}),
    );
    assert_eq!(asked["isError"], true, "{asked}");
    first.kill();

    let listed = |recurring: bool| {
        let mut args = vec!["toolsmith", "gaps", "--config", config.to_str().unwrap()];
        if recurring {
            args.push("--recurring");
        }
        warden(&args, &state)
    };
    let gaps = listed(false);
    let signatures: Vec<_> = gaps["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["signature"].as_str().unwrap())
        .collect();
    assert_eq!(signatures, ["pdf:render", "weather:forecast"], "{gaps}");
    assert!(
        listed(true)["gaps"].as_array().unwrap().is_empty(),
        "one session only"
    );

    // The same capability, spelled otherwise, from a second session.
    let mut second = Server::start(&config, &state);
    let reply = second.tool(1, "Weather.Forecast", json!({"city": "Oslo"}));
    assert_eq!(reply["isError"], true, "{reply}");
    second.kill();
    let recurring = listed(true);
    let gap = &recurring["gaps"][0];
    assert_eq!(gap["signature"], "weather:forecast", "{recurring}");
    assert_eq!(
        (gap["occurrences"].as_u64(), gap["sessions"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(
        gap["asked"],
        json!(["Weather.Forecast", "weather_forecast"])
    );
    assert_eq!(gap["agents"], json!(["alice"]));

    let records = warden(&["audit", "export", "--json"], &state);
    let announced: Vec<_> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "gap-recurring")
        .collect();
    assert_eq!(announced.len(), 1, "{records}");
    assert_eq!(announced[0]["event"]["signature"], "weather:forecast");
    assert_eq!(warden(&["audit", "verify"], &state)["ok"], true);
}

#[test]
fn a_gap_rule_of_zero_or_two_authors_is_refused_naming_the_key() {
    for (toolsmith, key, says) in [
        ("gap-threshold = 0", "toolsmith.gap-threshold", "at least 1"),
        (
            "author-sampling = true",
            "toolsmith.author-sampling",
            "enabled = true",
        ),
        (
            "enabled = true\nauthor-sampling = true\nauthor-command = [\"/bin/true\"]",
            "toolsmith.author-sampling",
            "not both",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = setup(dir.path(), &format!("[toolsmith]\n{toolsmith}\n"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["config", "check"])
            .arg(&config)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{toolsmith}: {said}");
        assert!(
            said.contains(key) && said.contains(says),
            "{toolsmith}: {said}"
        );
    }
}

/// `script` as an executable shell script at `path`.
fn write_script(path: &std::path::Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{script}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A configuration whose author command is `author.sh DIR`, with the
/// script and the blueprint it prints in `dir`.
fn authored(dir: &std::path::Path, script: &str, deadline: u64) -> (PathBuf, PathBuf) {
    write_script(&dir.join("author.sh"), script);
    let blueprint = json!({
        "capability": "weather:forecast",
        "title": "Forecast",
        "description": "The forecast for a city.",
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object"},
        "body": {"rust": {"lib_rs": "// forecasts\n"}},
        "cases": [
            {"name": "one", "args": {}, "expect": {"ok": {}}},
            {"name": "two", "args": {}, "expect": {"ok": {}}},
            {"name": "bad", "args": {}, "expect": {"error": {}}}
        ],
        "rationale": "agents asked for it",
        "witness": {"city": "Oslo"}
    });
    std::fs::write(dir.join("blueprint.json"), blueprint.to_string()).unwrap();
    setup(
        dir,
        &format!(
            "[toolsmith]\nenabled = true\ngap-threshold = 3\ngap-min-sessions = 2\n\
             author-command = [\"{script}\", \"{dir}\"]\n\
             author-deadline-secs = {deadline}\n\
             [toolsmith.capabilities.\"weather:*\"]\ncategory = \"external-data\"\n\
             action-type = \"external_data:request\"\n",
            script = dir.join("author.sh").display(),
            dir = dir.display(),
        ),
    )
}

fn blueprints(config: &std::path::Path, state: &std::path::Path) -> Vec<serde_json::Value> {
    let listed = warden(
        &[
            "toolsmith",
            "blueprints",
            "--config",
            config.to_str().unwrap(),
        ],
        state,
    );
    listed["blueprints"].as_array().unwrap().clone()
}

#[test]
fn a_gap_that_becomes_recurring_is_written_up_by_the_author_command_for_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = authored(
        dir.path(),
        "env > \"$1/env.txt\"\ncat > \"$1/request.json\"\ncat \"$1/blueprint.json\"\n",
        60,
    );
    let mut first = Server::start(&config, &state);
    for id in [1, 2] {
        assert_eq!(
            first.tool(id, "weather_forecast", json!({}))["isError"],
            true
        );
    }
    first
        .close(Duration::from_secs(20))
        .expect("the host stops");
    assert!(blueprints(&config, &state).is_empty(), "not recurring yet");

    // The second session's request makes the gap recurring: the host asks
    // the author command, and keeps what it writes for a person.
    let mut second = Server::start(&config, &state);
    assert_eq!(
        second.tool(1, "weather_forecast", json!({}))["isError"],
        true
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let kept = loop {
        let listed = blueprints(&config, &state);
        if let Some(b) = listed.first() {
            break b.clone();
        }
        assert!(Instant::now() < deadline, "no blueprint was authored");
        std::thread::sleep(Duration::from_millis(100));
    };
    second
        .close(Duration::from_secs(20))
        .expect("the host stops");
    assert_eq!(kept["state"], "pending", "{kept}");
    assert_eq!(kept["author"], "command:author.sh", "{kept}");
    assert_eq!(kept["name"], "gen_weather_forecast", "{kept}");

    // What the command was told: the gap, the name the host gives the
    // tool and its grants in words; and nothing of the host's environment.
    let request: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("request.json")).unwrap()).unwrap();
    assert_eq!(request["gap"]["signature"], "weather:forecast", "{request}");
    assert_eq!(request["gap"]["occurrences"], 3, "{request}");
    assert_eq!(request["tool"]["name"], "gen_weather_forecast", "{request}");
    assert!(
        request["tool"]["grants"]
            .as_array()
            .unwrap()
            .contains(&json!("has no network access")),
        "{request}"
    );
    let env = std::fs::read_to_string(dir.path().join("env.txt")).unwrap();
    assert!(env.contains("PATH=/usr/local/bin:/usr/bin:/bin"), "{env}");
    for inherited in ["HOME=", "WARDEN_", "CARGO"] {
        assert!(!env.contains(inherited), "{inherited} passed on: {env}");
    }
}

#[test]
fn an_author_command_that_overruns_or_fails_leaves_nothing_and_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = authored(
        dir.path(),
        "sleep 120 &\necho $! > \"$1/child.pid\"\nsleep 120\n",
        1,
    );
    let mut server = Server::start(&config, &state);
    assert_eq!(
        server.tool(1, "weather_forecast", json!({}))["isError"],
        true
    );
    server
        .close(Duration::from_secs(20))
        .expect("the host stops");

    let author = |config: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["toolsmith", "author", "weather:forecast", "--config"])
            .arg(config)
            .arg("--state-dir")
            .arg(&state)
            .output()
            .unwrap()
    };
    let out = author(&config);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("author-deadline-secs"), "{said}");
    // The child it left running in its group went with it.
    let pid = std::fs::read_to_string(dir.path().join("child.pid")).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(Instant::now() < deadline, "{pid} outlived its author");
        std::thread::sleep(Duration::from_millis(50));
    }

    // A command that fails, or prints something that is no blueprint.
    for script in [
        "echo 'no model today' >&2\nexit 3\n",
        "echo '{\"capability\": 1}'\n",
    ] {
        write_script(&dir.path().join("author.sh"), script);
        let out = author(&config);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(
            said.contains("no model today") || said.contains("at `capability`"),
            "{said}"
        );
    }
    assert!(blueprints(&config, &state).is_empty());

    // A blueprint it writes is kept like any other proposal.
    write_script(
        &dir.path().join("author.sh"),
        "cat > /dev/null\ncat \"$1/blueprint.json\"\n",
    );
    let out = author(&config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (kept["state"].as_str(), kept["author"].as_str()),
        (Some("pending"), Some("command:author.sh"))
    );
}

#[test]
fn the_model_behind_the_client_that_made_a_gap_recurring_writes_it_up() {
    let python = python::python();
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = setup(
        dir.path(),
        "[[serve.tokens]]\nagent = \"alice\"\ntoken = \"alice-token-0123456789\"\n\n\
         [toolsmith]\nenabled = true\ngap-threshold = 3\ngap-min-sessions = 2\n\
         author-sampling = true\nauthor-deadline-secs = 60\n\
         [toolsmith.capabilities.\"weather:*\"]\ncategory = \"external-data\"\n\
         action-type = \"external_data:request\"\n\
         [toolsmith.capabilities.\"pdf:*\"]\ncategory = \"analytics\"\naction-type = \"code:read\"\n\
         [toolsmith.capabilities.\"map:*\"]\ncategory = \"analytics\"\naction-type = \"code:read\"\n",
    );
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/sampling_client.py");
    let output = std::process::Command::new(&python)
        .arg(script)
        .args(["--warden", env!("CARGO_BIN_EXE_warden")])
        .arg("--config")
        .arg(&config)
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
