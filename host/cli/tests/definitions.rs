//! Definition digests: `warden tools list` shows, for every tool, the
//! digest of the definition a client is shown in `tools/list` (what a pin
//! on it records), so an operator can compare what they approved with what
//! a client sees.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Canonical JSON as RFC 8785 has it, for the values tool definitions
/// hold here (ASCII member names, integers): sorted members, no
/// whitespace. Written apart from Warden's own, as a client would.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, String> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            let members: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

#[test]
fn tools_list_digests_are_of_the_definitions_a_client_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (config, state) = support::setup(dir.path(), "");
    let listed = support::warden(
        &[
            "tools",
            "list",
            "--agent",
            "alice",
            "--json",
            "--config",
            config.to_str().unwrap(),
        ],
        &state,
    );
    let digests: BTreeMap<String, String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["definition-digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(digests.len() >= 6, "{digests:?}");

    let mut server = support::Server::start(&config, &state);
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
    let shown = server.response(1);
    let shown = shown["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = shown.iter().map(|t| t["name"].as_str().unwrap()).collect();
    // Every plugin tool is in both; the client also sees the host's own
    // `request_capability`, which is no plugin's.
    for name in digests.keys() {
        assert!(names.contains(&name.as_str()), "`{name}` in {names:?}");
    }
    assert_eq!(names.len(), digests.len() + 1, "{names:?}");
    for tool in shown {
        let name = tool["name"].as_str().unwrap();
        if name == "request_capability" {
            continue;
        }
        let covered: serde_json::Map<String, Value> = warden_mcp::DEFINITION_FIELDS
            .into_iter()
            .filter_map(|f| Some((f.to_owned(), tool.get(f)?.clone())))
            .collect();
        let text = canonical(&Value::Object(covered));
        let expected = warden_signing::sha256_digest(text.as_bytes());
        assert_eq!(digests[name], expected, "`{name}`: {text}");
    }
    server.kill();
}
