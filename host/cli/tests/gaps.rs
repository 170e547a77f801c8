//! The toolsmith's gap log through the real binary: calls to tools that
//! do not exist and capability requests for them, from two sessions,
//! make a recurring gap that `warden toolsmith gaps` lists and the audit
//! chain records once; a name that is no capability is not recorded.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

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
fn a_gap_rule_of_zero_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = setup(dir.path(), "[toolsmith]\ngap-threshold = 0\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["config", "check"])
        .arg(&config)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("toolsmith.gap-threshold"), "{said}");
}
