//! The local git tools on a real repository, through the gate.

use serde_json::json;
use warden_sandbox::SandboxConfig;

use super::fixture::{self, never};
use crate::common::{data, error};
use crate::sandbox::rig;

/// Status, commit, log, branch, diff, show, restore and reset on a
/// repository owned by root (the container runs as uid 1000:
/// `safe.directory` lets git accept it), with structured results.
#[tokio::test(flavor = "multi_thread")]
async fn local_operations_on_a_repository_owned_by_another_uid() {
    let r = rig("git-local", SandboxConfig::default()).await;
    let app = r.dir.path().join("app");
    fixture::repo(&app, &[("README.md", "hello\n")]);

    let s = r.call("git_status", json!({"repo": "app"})).await;
    let s = data(&s);
    assert_eq!(s["branch"]["head"], "main", "{s}");
    assert_eq!(s["clean"], true, "{s}");

    std::fs::write(app.join("notes.md"), "a note\n").unwrap();
    std::fs::write(app.join("README.md"), "hello again\n").unwrap();
    let s = r.call("git_status", json!({"repo": "app"})).await;
    let entries = data(&s)["entries"].as_array().unwrap().clone();
    assert!(
        entries.contains(
            &json!({"kind": "changed", "index": ".", "worktree": "M", "path": "README.md"})
        ),
        "{entries:?}"
    );
    assert!(
        entries.contains(&json!({"kind": "untracked", "path": "notes.md"})),
        "{entries:?}"
    );

    let d = r.call("git_diff", json!({"repo": "app"})).await;
    assert!(
        data(&d)["patch"].as_str().unwrap().contains("+hello again"),
        "{d:?}"
    );

    let c = r
        .call(
            "git_commit",
            json!({"repo": "app", "branch": "main", "message": "Add notes\n\nand a body"}),
        )
        .await;
    let commit = &data(&c)["commit"];
    assert_eq!(commit["subject"], "Add notes", "{c:?}");
    // No user.* in the repository: the agent is the author.
    assert_eq!(commit["author"]["name"], r.agent.as_str());
    let head = commit["hash"].as_str().unwrap().to_owned();

    let l = r.call("git_log", json!({"repo": "app"})).await;
    let commits = data(&l)["commits"].as_array().unwrap().clone();
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[0]["hash"], head.as_str());

    // The decision was for a commit to the branch the call names (its
    // specifier): a commit naming another branch than HEAD's, or made on
    // a detached HEAD, is refused and commits nothing.
    std::fs::write(app.join("notes.md"), "another note\n").unwrap();
    let e = r
        .call(
            "git_commit",
            json!({"repo": "app", "branch": "release", "message": "Sneak"}),
        )
        .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("PermissionDenied", "branch_mismatch"),
        "{msg}"
    );
    assert!(msg.contains("HEAD is on `main`"), "{msg}");
    fixture::git(&app, &["checkout", "-q", "--detach"]);
    let e = r
        .call(
            "git_commit",
            json!({"repo": "app", "branch": "main", "message": "Sneak"}),
        )
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "branch_mismatch", "{msg}");
    assert!(msg.contains("detached"), "{msg}");
    fixture::git(&app, &["checkout", "-q", "main"]);
    fixture::git(&app, &["checkout", "-q", "--", "notes.md"]);
    let l = r.call("git_log", json!({"repo": "app"})).await;
    assert_eq!(
        data(&l)["commits"].as_array().unwrap().len(),
        2,
        "nothing committed"
    );
    assert_eq!(commits[1]["subject"], "First");
    assert_eq!(commits[0]["parents"], json!([commits[1]["hash"]]));

    let b = r
        .call(
            "git_branch",
            json!({"repo": "app", "op": "create", "name": "feat/x"}),
        )
        .await;
    assert!(
        data(&b)["branches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["name"] == "feat/x")
    );
    r.call(
        "git_branch",
        json!({"repo": "app", "op": "switch", "name": "feat/x"}),
    )
    .await;
    let b = r
        .call("git_branch", json!({"repo": "app", "op": "list"}))
        .await;
    let current: Vec<_> = data(&b)["branches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["current"] == true)
        .map(|b| b["name"].clone())
        .collect();
    assert_eq!(current, vec![json!("feat/x")]);

    let sh = r
        .call("git_show", json!({"repo": "app", "rev": head}))
        .await;
    assert_eq!(data(&sh)["commit"]["subject"], "Add notes");
    assert!(data(&sh)["patch"].as_str().unwrap().contains("+a note"));

    std::fs::write(app.join("README.md"), "scribbles\n").unwrap();
    r.call(
        "git_restore",
        json!({"repo": "app", "paths": ["README.md"]}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(app.join("README.md")).unwrap(),
        "hello again\n"
    );

    let reset = r
        .call(
            "git_reset",
            json!({"repo": "app", "mode": "soft", "rev": "HEAD~1"}),
        )
        .await;
    assert_eq!(data(&reset)["head"]["subject"], "First", "{reset:?}");

    // Values that would be options are refused before git runs.
    let e = r
        .call(
            "git_show",
            json!({"repo": "app", "rev": "--output=/workspace/x"}),
        )
        .await;
    assert_eq!(error(&e).1, "invalid_argument", "{e:?}");
    assert!(!r.dir.path().join("x").exists());
    r.done().await;
}

/// Config that would run a program is refused naming the key, and the
/// program never runs; a hook in `.git/hooks` (no config key at all) does
/// not run either (`core.hooksPath=/dev/null`).
#[tokio::test(flavor = "multi_thread")]
async fn repository_config_never_runs_a_program() {
    let r = rig("git-noexec", SandboxConfig::default()).await;
    let ws = r.dir.path().to_owned();
    let marker = |name: &str| never(&ws, name);
    let script = |name: &str| {
        let path = ws.join(format!("{name}.sh"));
        std::fs::write(
            &path,
            format!("#!/bin/sh\ntouch /workspace/MARKER-{name}\ncat\n"),
        )
        .unwrap();
        fixture::share(&path);
        format!("/workspace/{name}.sh")
    };
    for (name, key, value) in [
        ("fsmonitor", "core.fsmonitor", script("fsmonitor")),
        ("hookspath", "core.hooksPath", "/workspace/hooks".to_owned()),
        ("extdiff", "diff.external", script("extdiff")),
        ("filter", "filter.evil.clean", script("filter")),
        (
            "include",
            "include.path",
            "/workspace/other.config".to_owned(),
        ),
        (
            "insteadof",
            "url.http://127.0.0.1:1/.insteadOf",
            "https://example.com/".to_owned(),
        ),
        ("proxy", "http.proxy", "http://127.0.0.1:1".to_owned()),
        ("pager", "core.pager", script("pager")),
    ] {
        let dir = ws.join(name);
        fixture::repo(
            &dir,
            &[
                ("a.txt", "a\n"),
                (".gitattributes", "* filter=evil diff=evil\n"),
            ],
        );
        fixture::git(&dir, &["config", key, &value]);
        std::fs::write(dir.join("a.txt"), "changed\n").unwrap();
        for (tool, args) in [
            ("git_status", json!({"repo": name})),
            ("git_diff", json!({"repo": name})),
            (
                "git_commit",
                json!({"repo": name, "branch": "main", "message": "m"}),
            ),
        ] {
            let e = r.call(tool, args).await;
            let (ty, code, msg) = error(&e);
            assert_eq!(
                (ty.as_str(), code.as_str()),
                ("PermissionDenied", "repo_config_refused"),
                "{name} {tool}: {msg}"
            );
            assert!(
                msg.to_lowercase().contains(&key.to_lowercase()),
                "{name}: the key is named: {msg}"
            );
        }
        assert!(!marker(name).exists(), "{name} ran");
    }

    // A hook where git looks by default: the config is clean, the commit
    // runs, the hook does not.
    let dir = ws.join("hooked");
    fixture::repo(&dir, &[("a.txt", "a\n")]);
    for hook in [
        "pre-commit",
        "post-commit",
        "commit-msg",
        "post-index-change",
    ] {
        let path = dir.join(".git/hooks").join(hook);
        std::fs::write(
            &path,
            format!("#!/bin/sh\ntouch /workspace/MARKER-{hook}\n"),
        )
        .unwrap();
    }
    fixture::share(&dir);
    std::fs::write(dir.join("a.txt"), "b\n").unwrap();
    let c = r
        .call(
            "git_commit",
            json!({"repo": "hooked", "branch": "main", "message": "no hooks"}),
        )
        .await;
    assert_eq!(data(&c)["commit"]["subject"], "no hooks", "{c:?}");
    for hook in [
        "pre-commit",
        "post-commit",
        "commit-msg",
        "post-index-change",
    ] {
        assert!(!marker(hook).exists(), "{hook} ran");
    }
    r.done().await;
}

/// A read-only workspace grant: reads work, writes are refused before
/// anything runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_workspace_reads_but_never_commits() {
    let r = crate::sandbox::rig_with(
        "git-ro",
        SandboxConfig::default(),
        warden_api::FsAccess::Read,
        &[],
        "",
    )
    .await;
    fixture::repo(r.dir.path(), &[("a.txt", "a\n")]);
    let s = r.call("git_status", json!({})).await;
    assert_eq!(data(&s)["clean"], true, "{s:?}");
    std::fs::write(r.dir.path().join("a.txt"), "b\n").unwrap();
    let e = r
        .call("git_commit", json!({"branch": "main", "message": "m"}))
        .await;
    assert_eq!(error(&e).1, "workspace_read_only", "{e:?}");
    r.done().await;
}

/// Output larger than `max-output-bytes` is cut; a structured result is
/// then refused (a partial parse would be a lie), a patch says it was cut.
#[tokio::test(flavor = "multi_thread")]
async fn output_past_the_cap_is_never_a_partial_structured_result() {
    let config = SandboxConfig {
        max_output_bytes: 2048,
        ..SandboxConfig::default()
    };
    let r = rig("git-cap", config).await;
    let app = r.dir.path().join("app");
    fixture::repo(&app, &[("a.txt", "a\n")]);
    for i in 0..40 {
        std::fs::write(app.join("a.txt"), format!("{i}\n")).unwrap();
        fixture::git(
            &app,
            &["commit", "-q", "-am", &format!("commit number {i}")],
        );
    }
    fixture::share(&app);
    let e = r.call("git_log", json!({"repo": "app"})).await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "output_too_large"),
        "{msg}"
    );
    std::fs::write(app.join("a.txt"), "x\n".repeat(3000)).unwrap();
    let d = r.call("git_diff", json!({"repo": "app"})).await;
    assert_eq!(data(&d)["truncated"], true, "{d:?}");
    assert!(data(&d)["patch"].as_str().unwrap().len() <= 2048);
    let l = r
        .call("git_log", json!({"repo": "app", "max_count": 3}))
        .await;
    assert_eq!(data(&l)["commits"].as_array().unwrap().len(), 3);
    r.done().await;
}
