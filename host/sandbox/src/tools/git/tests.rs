use serde_json::json;
use warden_api::VcsOperation::*;

use super::operation;

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
        assert_eq!(operation(tool, &args), Some(op), "{tool} {args}");
    }
    assert_eq!(operation("terminal_exec", &json!({})), None);
}

#[test]
fn every_git_tool_declares_an_operation() {
    for spec in crate::tools::specs::all().unwrap() {
        let name = spec.name.as_str();
        assert_eq!(
            name.starts_with("git_"),
            operation(name, &json!({"op": "list"})).is_some(),
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
