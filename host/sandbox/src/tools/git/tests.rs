use serde_json::json;
use warden_api::VcsOperation::*;
use warden_api::{FsAccess, FsGrant, Grants, VcsFacts};

use super::operation;
use warden_vcs::GitNetPolicy;

#[test]
fn each_call_declares_what_it_does() {
    for (tool, args, op) in [
        ("git_status", json!({}), Read),
        ("git_show", json!({"rev": "HEAD"}), Read),
        ("git_branch", json!({"op": "list"}), Read),
        ("git_branch", json!({"op": "create", "name": "x"}), Branch),
        ("git_branch", json!({"op": "switch", "name": "x"}), Branch),
        (
            "git_branch",
            json!({"op": "delete", "name": "x"}),
            BranchDelete,
        ),
        ("git_branch", json!({"op": "LIST"}), BranchDelete),
        ("git_commit", json!({"message": "m"}), Commit),
        ("git_restore", json!({"paths": ["a"]}), Discard),
        ("git_reset", json!({"mode": "soft", "rev": "HEAD"}), Discard),
        (
            "git_clone",
            json!({"url": "https://x/y", "dest": "y"}),
            Fetch,
        ),
        ("git_fetch", json!({"remote": "origin"}), Fetch),
        ("git_push", json!({"remote": "o", "branch": "b"}), Push),
        (
            "git_push",
            json!({"remote": "o", "branch": "b", "force": false}),
            Push,
        ),
        (
            "git_push",
            json!({"remote": "o", "branch": "b", "force": true}),
            ForcePush,
        ),
        // Not a boolean: the schema refuses it, and until then it is the furthest.
        (
            "git_push",
            json!({"remote": "o", "branch": "b", "force": "yes"}),
            ForcePush,
        ),
    ] {
        assert_eq!(
            operation(tool, &args, &GitNetPolicy::new(), None).map(|f| f.operation),
            Some(op),
            "{tool} {args}"
        );
    }
    assert_eq!(
        operation("terminal_exec", &json!({}), &GitNetPolicy::new(), None),
        None
    );
}

/// A clone from a host `[sandbox.git] allow-hosts` names runs without
/// asking in default mode; the agent cannot get there by spelling another
/// host to look like it, or a URL the validator refuses anyway.
#[test]
fn a_clone_is_allowlisted_only_for_the_canonical_host_the_operator_named() {
    let policy = GitNetPolicy::new().allow_host("git.internal").unwrap();
    let clone = |url: &str| {
        operation(
            "git_clone",
            &json!({"url": url, "dest": "r"}),
            &policy,
            None,
        )
        .map(|f| f.operation)
    };
    for url in [
        "https://git.internal/team/repo.git",
        "https://GIT.Internal./team/repo.git",
        "ssh://git@git.internal/team/repo.git",
        "git@git.internal:team/repo.git",
    ] {
        assert_eq!(clone(url), Some(FetchAllowlisted), "{url}");
    }
    for url in [
        "https://git.internal.evil.example/r.git",
        "https://evil.example/git.internal/r.git",
        "https://git.internal@evil.example/r.git",
        "https://evil.example/r.git#git.internal",
        "file:///git.internal/r.git",
        "ext::sh -c git.internal",
        "-https://git.internal/r",
        "not a url",
    ] {
        assert_eq!(clone(url), Some(Fetch), "{url}");
    }
    assert_eq!(
        operation("git_clone", &json!({"dest": "r"}), &policy, None).map(|f| f.operation),
        Some(Fetch)
    );
    // A described call without a workspace: the remote is unknown.
    assert_eq!(
        operation("git_fetch", &json!({"remote": "origin"}), &policy, None).map(|f| f.operation),
        Some(Fetch)
    );
}

/// A workspace holding repository `app` whose `.git/config` is `config`.
fn workspace(config: &str) -> (tempfile::TempDir, Grants) {
    let dir = tempfile::tempdir().unwrap();
    let git = dir.path().join("app/.git");
    std::fs::create_dir_all(&git).unwrap();
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(git.join("config"), config).unwrap();
    let grants = Grants {
        fs: vec![FsGrant {
            host_path: dir.path().to_owned(),
            guest_path: "/workspace".into(),
            access: FsAccess::ReadWrite,
        }],
        ..Grants::default()
    };
    (dir, grants)
}

fn fetch_of(config: &str, remote: &str) -> VcsFacts {
    let policy = GitNetPolicy::new().allow_host("git.internal").unwrap();
    let (_dir, grants) = workspace(config);
    let args = json!({"repo": "app", "remote": remote});
    operation("git_fetch", &args, &policy, Some(&grants)).unwrap()
}

/// A fetch is judged by where its remote points when the call is
/// prepared: allowlisted only when the repository's remote URL names an
/// allowlisted host, never by the remote's name, and never through a
/// config the allowlist refuses.
#[test]
fn a_fetch_is_allowlisted_only_when_its_remote_points_at_an_allowlisted_host() {
    let f = fetch_of(
        "[remote \"origin\"]\n\turl = https://GIT.internal./team/repo.git\n",
        "origin",
    );
    assert_eq!(f.operation, FetchAllowlisted);
    assert_eq!(
        f.remote.as_deref(),
        Some("https://git.internal/team/repo.git")
    );
    assert_eq!(f.remote_host.as_deref(), Some("git.internal"));

    // A remote named like the allowlisted host, pointing elsewhere.
    let f = fetch_of(
        "[remote \"git.internal\"]\n\turl = https://evil.example/r.git\n",
        "git.internal",
    );
    assert_eq!(f.operation, Fetch);
    assert_eq!(f.remote_host.as_deref(), Some("evil.example"));

    // An allowlisted URL on another remote than the one fetched.
    let f = fetch_of(
        "[remote \"good\"]\n\turl = https://git.internal/r.git\n\
         [remote \"origin\"]\n\turl = https://evil.example/r.git\n",
        "origin",
    );
    assert_eq!(f.operation, Fetch);

    // A rewrite to the allowlisted host: the config check refuses the
    // repository, and nothing is judged allowlisted.
    let f = fetch_of(
        "[remote \"origin\"]\n\turl = https://evil.example/r.git\n\
         [url \"https://git.internal/\"]\n\tinsteadOf = https://evil.example/\n",
        "origin",
    );
    assert_eq!((f.operation, f.remote), (Fetch, None));

    // A remote the validator refuses, and one not configured at all.
    let f = fetch_of("[remote \"origin\"]\n\turl = file:///srv/r.git\n", "origin");
    assert_eq!((f.operation, f.remote), (Fetch, None));
    let f = fetch_of("", "origin");
    assert_eq!((f.operation, f.remote), (Fetch, None));
}

/// A push declares the remote it reaches too (the network sub-constraint
/// judges its host).
#[test]
fn a_push_declares_its_remote() {
    let policy = GitNetPolicy::new();
    let (_dir, grants) = workspace("[remote \"origin\"]\n\turl = https://git.example.com/r.git\n");
    let args = json!({"repo": "app", "remote": "origin", "branch": "main"});
    let f = operation("git_push", &args, &policy, Some(&grants)).unwrap();
    assert_eq!(f.operation, Push);
    assert_eq!(f.remote_host.as_deref(), Some("git.example.com"));
}

#[test]
fn every_git_tool_declares_an_operation() {
    for spec in crate::tools::specs::all().unwrap() {
        let name = spec.name.as_str();
        assert_eq!(
            name.starts_with("git_"),
            operation(name, &json!({"op": "list"}), &GitNetPolicy::new(), None).is_some(),
            "{name}"
        );
    }
}

#[test]
fn every_git_tool_describes_its_result() {
    for spec in crate::tools::specs::all().unwrap() {
        if spec.name.as_str().starts_with("git_") {
            let props = spec.result_schema["properties"].as_object();
            assert!(props.is_some_and(|p| !p.is_empty()), "{}", spec.name);
            assert!(spec.result_schema["required"].is_array(), "{}", spec.name);
        }
    }
}

#[test]
fn a_bad_allowlisted_host_is_a_config_error_at_start() {
    let config = crate::SandboxConfig {
        git: crate::GitSettings {
            allow_hosts: vec!["git.internal".into(), "not a host".into()],
            ..crate::GitSettings::default()
        },
        ..crate::SandboxConfig::default()
    };
    let e = crate::SandboxTools::new(config).unwrap_err().to_string();
    assert!(
        e.contains("[sandbox.git] allow-hosts") && e.contains("not a host"),
        "{e}"
    );
}
