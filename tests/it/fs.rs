//! The bundled fs plugin on real files.

use serde_json::json;
use warden_api::{FsAccess, Grants};

use crate::common::{self, data, error};

fn workspace() -> (tempfile::TempDir, Grants) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lines.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    let grants = common::grant(dir.path(), FsAccess::ReadWrite);
    (dir, grants)
}

#[tokio::test(flavor = "multi_thread")]
async fn specs_are_what_the_issue_asks_for() {
    let fs = common::fs_plugin().await;
    let tools: Vec<_> = fs
        .manifest()
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.action_type.as_str(), t.side_effect))
        .collect();
    assert_eq!(
        tools,
        [
            ("fs_read", "code:read", false),
            ("fs_write", "code:write", true),
            ("fs_edit", "code:write", true),
            ("fs_list", "code:read", false),
            ("fs_delete", "code:delete", true),
        ]
    );
    for t in &fs.manifest().tools {
        assert_eq!(t.category, warden_api::Category::FileSystem);
        assert_eq!(t.specifier_template.as_deref(), Some("{path}"));
        assert_eq!(t.params_schema["required"][0], "path", "{}", t.name);
        assert_eq!(t.params_schema["additionalProperties"], false);
    }
    let read = &fs.manifest().tools[0];
    assert_eq!(
        read.params_schema["properties"]["offset"]["type"],
        json!(["integer", "null"])
    );
    assert!(
        read.params_schema["properties"]["path"]["description"]
            .as_str()
            .unwrap()
            .contains("relative")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn read_with_offset_and_limit() {
    let (_dir, g) = workspace();
    let fs = common::fs_plugin().await;
    let e = common::call(
        &fs,
        "fs_read",
        json!({"path": "lines.txt", "offset": 1, "limit": 2}),
        &g,
        common::limits(),
    )
    .await;
    let d = data(&e);
    assert_eq!(d["content"], "two\nthree\n");
    assert_eq!(
        (
            d["offset"].as_u64(),
            d["lines"].as_u64(),
            d["total_lines"].as_u64()
        ),
        (Some(1), Some(2), Some(4))
    );
    assert_eq!(d["truncated"], true);
    let e = common::call(
        &fs,
        "fs_read",
        json!({"path": "/workspace/lines.txt"}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["content"], "one\ntwo\nthree\nfour\n");
    let e = common::call(
        &fs,
        "fs_read",
        json!({"path": "missing.txt"}),
        &g,
        common::limits(),
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("ToolError", "not_found"),
        "{msg}"
    );
}

/// Windows at the edges of a file: past its end, empty, running off its
/// end, over a last line with no newline, and an empty file.
#[tokio::test(flavor = "multi_thread")]
async fn read_windows_at_the_edges() {
    let (dir, g) = workspace();
    std::fs::write(dir.path().join("open.txt"), "a\r\nb\nc").unwrap();
    std::fs::write(dir.path().join("empty.txt"), "").unwrap();
    let fs = common::fs_plugin().await;
    let cases = [
        (
            json!({"path": "lines.txt", "offset": 9}),
            "",
            4,
            0,
            4,
            false,
        ),
        (
            json!({"path": "lines.txt", "offset": 4, "limit": 3}),
            "",
            4,
            0,
            4,
            false,
        ),
        (
            json!({"path": "lines.txt", "offset": 1, "limit": 0}),
            "",
            1,
            0,
            4,
            true,
        ),
        (
            json!({"path": "lines.txt", "offset": 2, "limit": 99}),
            "three\nfour\n",
            2,
            2,
            4,
            false,
        ),
        (
            json!({"path": "lines.txt", "limit": 1}),
            "one\n",
            0,
            1,
            4,
            true,
        ),
        (
            json!({"path": "open.txt", "offset": 1}),
            "b\nc",
            1,
            2,
            3,
            false,
        ),
        (
            json!({"path": "open.txt", "limit": 1}),
            "a\r\n",
            0,
            1,
            3,
            true,
        ),
        (json!({"path": "open.txt"}), "a\r\nb\nc", 0, 3, 3, false),
        (
            json!({"path": "empty.txt", "offset": 1}),
            "",
            0,
            0,
            0,
            false,
        ),
    ];
    for (args, content, offset, lines, total, truncated) in cases {
        let e = common::call(&fs, "fs_read", args.clone(), &g, common::limits()).await;
        let d = data(&e);
        assert_eq!(
            (
                d["content"].as_str(),
                d["offset"].as_u64(),
                d["lines"].as_u64(),
                d["total_lines"].as_u64(),
                d["truncated"].as_bool()
            ),
            (
                Some(content),
                Some(offset),
                Some(lines),
                Some(total),
                Some(truncated)
            ),
            "{args}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn binary_files_are_refused() {
    let (dir, g) = workspace();
    std::fs::write(dir.path().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
    let fs = common::fs_plugin().await;
    let e = common::call(&fs, "fs_read", json!({"path": "bin"}), &g, common::limits()).await;
    assert_eq!(error(&e).1, "not_text");
}

#[tokio::test(flavor = "multi_thread")]
async fn write_then_edit() {
    let (dir, g) = workspace();
    let fs = common::fs_plugin().await;
    let e = common::call(
        &fs,
        "fs_write",
        json!({"path": "deep/new.txt", "content": "a\nb\na\n", "create_dirs": true}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["created"], true);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/new.txt")).unwrap(),
        "a\nb\na\n"
    );

    let e = common::call(
        &fs,
        "fs_edit",
        json!({"path": "deep/new.txt", "old": "a\n", "new": "z\n"}),
        &g,
        common::limits(),
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("ToolError", "edit_ambiguous")
    );
    assert!(
        msg.contains("2 times") && msg.contains("lines 1, 3"),
        "{msg}"
    );

    let e = common::call(
        &fs,
        "fs_edit",
        json!({"path": "deep/new.txt", "old": "nope", "new": "z"}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(error(&e).1, "edit_no_match");

    let e = common::call(
        &fs,
        "fs_edit",
        json!({"path": "deep/new.txt", "old": "b\na", "new": "B\nA"}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["line"], 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/new.txt")).unwrap(),
        "a\nB\nA\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn write_under_a_read_only_grant_is_denied() {
    let (dir, _) = workspace();
    let ro = common::grant(dir.path(), FsAccess::Read);
    let fs = common::fs_plugin().await;
    let e = common::call(
        &fs,
        "fs_write",
        json!({"path": "x.txt", "content": "x"}),
        &ro,
        common::limits(),
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("ToolError", "access_denied"),
        "{msg}"
    );
    assert!(
        msg.contains("grant"),
        "the denial says what would allow it: {msg}"
    );
    assert!(!dir.path().join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn list_recursive_with_glob_does_not_follow_symlinks_out() {
    let (dir, g) = workspace();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.rs"), "x").unwrap();
    std::fs::create_dir_all(dir.path().join("src/bin")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(dir.path().join("src/bin/tool.rs"), "").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("src/link")).unwrap();
    let fs = common::fs_plugin().await;

    let e = common::call(
        &fs,
        "fs_list",
        json!({"path": "src", "recursive": true, "glob": "**/*.rs"}),
        &g,
        common::limits(),
    )
    .await;
    let paths: Vec<_> = data(&e)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(paths, ["bin/tool.rs", "main.rs"]);

    let e = common::call(&fs, "fs_list", json!({"path": "src"}), &g, common::limits()).await;
    let entries = data(&e)["entries"].as_array().unwrap().clone();
    let link = entries.iter().find(|e| e["path"] == "link").unwrap();
    assert_eq!(link["kind"], "symlink");

    let e = common::call(
        &fs,
        "fs_list",
        json!({"path": "src", "max_entries": 1}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["truncated"], true);

    let e = common::call(
        &fs,
        "fs_list",
        json!({"path": "src", "glob": "[oops"}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(error(&e).1, "invalid_argument");
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_files_and_trees() {
    let (dir, g) = workspace();
    std::fs::create_dir_all(dir.path().join("tree/inner")).unwrap();
    std::fs::write(dir.path().join("tree/inner/f"), "").unwrap();
    let fs = common::fs_plugin().await;
    let e = common::call(
        &fs,
        "fs_delete",
        json!({"path": "tree"}),
        &g,
        common::limits(),
    )
    .await;
    let (_, _, msg) = error(&e);
    assert!(msg.contains("recursive"), "{msg}");
    assert!(dir.path().join("tree/inner/f").exists());
    let e = common::call(
        &fs,
        "fs_delete",
        json!({"path": "tree", "recursive": true}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["kind"], "dir");
    assert!(!dir.path().join("tree").exists());
    let e = common::call(
        &fs,
        "fs_delete",
        json!({"path": "lines.txt"}),
        &g,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["kind"], "file");
    assert!(!dir.path().join("lines.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_unknown_tools_are_errors_not_crashes() {
    let fs = common::fs_plugin().await;
    let (_dir, g) = workspace();
    // The gate refuses unknown tools before dispatch; the plugin itself
    // also answers an unknown name with an error, never a trap.
    let mut spec = fs.manifest().tools[0].clone();
    spec.name = "fs_nope".parse().unwrap();
    let args = json!({});
    let ctx = common::context();
    let e = fs
        .invoke(warden_api::BackendCall {
            tool: &spec,
            args: &args,
            context: &ctx,
            grants: &g,
            limits: common::limits(),
            events: None,
            paths: None,
            cwd: None,
            remote: None,
        })
        .await;
    assert_eq!(error(&e).1, "unknown_tool");
}
