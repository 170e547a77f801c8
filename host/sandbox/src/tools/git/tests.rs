use serde_json::json;
use warden_api::VcsOperation::*;

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
            operation(tool, &args, &GitNetPolicy::new()),
            Some(op),
            "{tool} {args}"
        );
    }
    assert_eq!(
        operation("terminal_exec", &json!({}), &GitNetPolicy::new()),
        None
    );
}

/// A clone from a host `[sandbox.git] allow-hosts` names runs without
/// asking in default mode; the agent cannot get there by spelling another
/// host to look like it, or a URL the validator refuses anyway.
#[test]
fn a_clone_is_allowlisted_only_for_the_canonical_host_the_operator_named() {
    let policy = GitNetPolicy::new().allow_host("git.internal").unwrap();
    let clone = |url: &str| operation("git_clone", &json!({"url": url, "dest": "r"}), &policy);
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
        operation("git_clone", &json!({"dest": "r"}), &policy),
        Some(Fetch)
    );
    // A fetch names a remote, whose URL is read only when it runs.
    assert_eq!(
        operation("git_fetch", &json!({"remote": "origin"}), &policy),
        Some(Fetch)
    );
}

#[test]
fn every_git_tool_declares_an_operation() {
    for spec in crate::tools::specs::all().unwrap() {
        let name = spec.name.as_str();
        assert_eq!(
            name.starts_with("git_"),
            operation(name, &json!({"op": "list"}), &GitNetPolicy::new()).is_some(),
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
