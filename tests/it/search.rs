//! The `search` plugin on a real tree that holds a symlink to a directory
//! outside the grant and one to a file outside it: neither is followed.

use serde_json::{Value, json};
use warden_api::FsAccess;

use crate::common::{self, data, error};

struct Tree {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    for d in ["src/util", "target", "docs"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        ws.join("src/main.rs"),
        "fn main() {\n    // TODO: parse args\n    run();\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/util/mod.rs"),
        "pub fn run() {}\n// todo lower\n",
    )
    .unwrap();
    std::fs::write(ws.join("target/gen.rs"), "// TODO generated\n").unwrap();
    std::fs::write(ws.join("docs/notes.md"), "TODO: write docs\n").unwrap();
    std::fs::write(ws.join("blob.bin"), b"TODO\0binary").unwrap();
    std::fs::write(outside.join("secret.rs"), "// TODO TOPSECRET\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("linked_dir")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.rs"), ws.join("src/linked.rs")).unwrap();
    Tree { _dir: dir, ws }
}

async fn call(tool: &str, t: &Tree, args: Value) -> warden_api::Envelope {
    let plugin = common::load(&common::runtime(), warden_test_artifacts::SEARCH).await;
    common::call(
        &plugin,
        tool,
        args,
        &common::grant(&t.ws, FsAccess::Read),
        common::limits(),
    )
    .await
}

fn matches(out: &Value) -> Vec<(String, u64)> {
    out["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_owned(),
                m["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_finds_matches_with_context_and_never_follows_symlinks() {
    let t = tree();
    let e = call("search_grep", &t, json!({"pattern": "TODO", "context": 1})).await;
    let out = data(&e);
    assert_eq!(
        matches(out),
        [
            ("docs/notes.md".into(), 1),
            ("src/main.rs".into(), 2),
            ("target/gen.rs".into(), 1)
        ]
    );
    let first_rs = &out["matches"][1];
    assert_eq!(first_rs["text"], "    // TODO: parse args");
    assert_eq!(first_rs["before"], json!(["fn main() {"]));
    assert_eq!(first_rs["after"], json!(["    run();"]));
    assert!(!out.to_string().contains("TOPSECRET"));
    assert_eq!(out["truncated"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_filters_by_globs_case_and_count() {
    let t = tree();
    let e = call(
        "search_grep",
        &t,
        json!({"pattern": "todo", "ignore_case": true, "include": ["*.rs"], "exclude": ["target"]}),
    )
    .await;
    assert_eq!(
        matches(data(&e)),
        [("src/main.rs".into(), 2), ("src/util/mod.rs".into(), 2)]
    );
    let e = call(
        "search_grep",
        &t,
        json!({"pattern": "TODO", "max_results": 2}),
    )
    .await;
    let out = data(&e);
    assert_eq!(out["matches"].as_array().unwrap().len(), 2);
    assert_eq!(out["truncated"], true);
    let e = call(
        "search_grep",
        &t,
        json!({"pattern": "run()", "fixed_strings": true}),
    )
    .await;
    assert_eq!(
        matches(data(&e)),
        [("src/main.rs".into(), 3), ("src/util/mod.rs".into(), 1)]
    );
    let e = call("search_grep", &t, json!({"pattern": "run("})).await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "invalid_pattern", "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_through_a_symlink_out_of_the_grant_is_refused() {
    let t = tree();
    for path in ["linked_dir", "src/linked.rs", "/workspace/../outside"] {
        let e = call("search_grep", &t, json!({"pattern": "TODO", "path": path})).await;
        match &e {
            warden_api::Envelope::Ok { data } => {
                assert_eq!(data["matches"], json!([]), "{path}: {data}");
            }
            other => {
                let (ty, _, msg) = error(other);
                assert_eq!(ty, "ToolError", "{path}: {msg}");
                assert!(!msg.contains("TOPSECRET"), "{msg}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn glob_lists_matching_files_but_no_symlinks() {
    let t = tree();
    let e = call("search_glob", &t, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        data(&e)["paths"],
        json!(["src/main.rs", "src/util/mod.rs", "target/gen.rs"])
    );
    let e = call(
        "search_glob",
        &t,
        json!({"pattern": "*.md", "path": "docs"}),
    )
    .await;
    assert_eq!(data(&e)["paths"], json!(["notes.md"]));
    let e = call(
        "search_glob",
        &t,
        json!({"pattern": "*", "include_dirs": true, "exclude": ["target", "*.rs"], "max_results": 3}),
    )
    .await;
    let out = data(&e);
    assert_eq!(out["paths"], json!(["blob.bin", "docs", "docs/notes.md"]));
    assert_eq!(out["truncated"], true);
}
