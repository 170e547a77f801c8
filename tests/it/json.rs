//! The `json` plugin: jq filters (jaq) over inline values and real files.

use serde_json::{Value, json};
use warden_api::FsAccess;

use crate::common::{self, data, error};

async fn query(ws: &std::path::Path, args: Value) -> warden_api::Envelope {
    let plugin = common::load(&common::runtime(), warden_test_artifacts::JSON).await;
    common::call(
        &plugin,
        "json_query",
        args,
        &common::grant(ws, FsAccess::Read),
        common::limits(),
    )
    .await
}

fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("package.json"),
        r#"{"name": "demo", "dependencies": {"zod": "3", "axios": "1"}, "scripts": {"test": "jest"}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("secret.json"), r#"{"token": "TOPSECRET"}"#).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.json"), ws.join("link.json")).unwrap();
    (dir, ws)
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_a_granted_file() {
    let (_dir, ws) = workspace();
    let e = query(
        &ws,
        json!({"filter": ".dependencies | keys", "path": "package.json"}),
    )
    .await;
    assert_eq!(data(&e)["results"], json!([["axios", "zod"]]));
    let e = query(
        &ws,
        json!({"filter": ".dependencies | to_entries[] | \"\\(.key)@\\(.value)\"", "path": "package.json"}),
    )
    .await;
    assert_eq!(data(&e)["results"], json!(["zod@3", "axios@1"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_an_inline_value_with_jq_builtins() {
    let (_dir, ws) = workspace();
    let input = json!({"items": [
        {"title": "a", "done": true, "n": 3},
        {"title": "b", "done": false, "n": 5},
        {"title": "c", "done": false, "n": 7}
    ]});
    let e = query(
        &ws,
        json!({"filter": "[.items[] | select(.done | not) | .n] | add", "input": input}),
    )
    .await;
    assert_eq!(data(&e)["results"], json!([12]));
    let e = query(
        &ws,
        json!({"filter": ".items | group_by(.done) | map(length)", "input": input}),
    )
    .await;
    assert_eq!(data(&e)["results"], json!([[2, 1]]));
    let e = query(
        &ws,
        json!({"filter": "range(10)", "input": 0, "max_results": 3}),
    )
    .await;
    let out = data(&e);
    assert_eq!(out["results"], json!([0, 1, 2]));
    assert_eq!(out["truncated"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_filters_and_inputs_are_tool_errors() {
    let (_dir, ws) = workspace();
    let e = query(&ws, json!({"filter": ".[", "input": {}})).await;
    assert_eq!(error(&e).1, "invalid_filter");
    let e = query(&ws, json!({"filter": "nosuchfn", "input": {}})).await;
    assert_eq!(error(&e).1, "invalid_filter");
    let e = query(&ws, json!({"filter": ".a + 1", "input": {"a": "x"}})).await;
    assert_eq!(error(&e).1, "filter_error");
    let e = query(
        &ws,
        json!({"filter": ".", "input": {}, "path": "package.json"}),
    )
    .await;
    assert_eq!(error(&e).1, "invalid_argument");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_out_of_the_grant_is_not_followed() {
    let (_dir, ws) = workspace();
    let e = query(&ws, json!({"filter": ".token", "path": "link.json"})).await;
    let (ty, _, msg) = error(&e);
    assert_eq!(ty, "ToolError", "{msg}");
    assert!(!msg.contains("TOPSECRET"), "{msg}");
}
