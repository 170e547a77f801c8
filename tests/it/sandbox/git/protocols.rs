//! The second layer under the URL validator: with the validator bypassed
//! (a URL it would refuse put straight on the command line), git 2.39.5
//! in the git image still refuses every transport but https and ssh,
//! because of the `protocol.*` options every invocation carries.

use std::time::Duration;

use warden_api::{CallContext, Grants};
use warden_sandbox::images::ImageKind;
use warden_sandbox::{RunRequest, Sandbox as _, SandboxConfig};
use warden_vcs::{GitOp, Workspace, git_argv};

use crate::sandbox::rig;

/// Runs `argv` as is in the rig agent's warm git container (no network).
async fn in_git_container(
    r: &crate::sandbox::Rig,
    context: &CallContext,
    argv: Vec<String>,
) -> warden_sandbox::RunOutput {
    r.sandbox
        .run(RunRequest {
            kind: ImageKind::Git,
            context,
            grants: &Grants::default(),
            argv,
            stdin: None,
            working_dir: None,
            timeout: Duration::from_secs(30),
            max_output: None,
            paths: None,
            own_container: false,
            scratch_mb: None,
            read_only: false,
        })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn git_itself_refuses_the_transports_the_validator_refuses() {
    let r = rig("git-protocols", SandboxConfig::default()).await;
    // Every global option of a real invocation (neutralisers included),
    // and its environment, with a clone of a URL the validator refuses.
    let base = git_argv(
        &GitOp::Status { paths: vec![] },
        None,
        &Workspace::new("/tmp").unwrap(),
    )
    .unwrap();
    let args: Vec<String> = base
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let globals = &args[..args.iter().position(|a| a == "-C").unwrap()];
    let context = CallContext {
        principal: None,
        agent: r.agent.clone(),
        session: "s".into(),
        task: None,
        request_id: "r".into(),
    };
    // A real repository for the local-path cases (git checks that first).
    let init = in_git_container(
        &r,
        &context,
        ["git", "init", "-q", "/tmp/src"].map(String::from).to_vec(),
    )
    .await;
    assert_eq!(init.output.exit_code, Some(0), "{init:?}");
    for (url, refused) in [
        (
            "ext::sh -c touch% /tmp/MARKER-ext",
            "transport 'ext' not allowed",
        ),
        ("file:///tmp/src", "transport 'file' not allowed"),
        ("/tmp/src", "transport 'file' not allowed"),
        ("git://127.0.0.1/x", "transport 'git' not allowed"),
        ("http://127.0.0.1:1/x", "transport 'http' not allowed"),
        ("fd::3", "transport 'fd' not allowed"),
    ] {
        let mut argv = vec!["/usr/bin/env".to_owned(), "-i".to_owned()];
        argv.extend(
            base.env
                .iter()
                .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())),
        );
        argv.push("/usr/bin/git".to_owned());
        argv.extend(globals.iter().cloned());
        argv.extend(["-C", "/tmp", "clone", "--", url, "/tmp/out"].map(String::from));
        let out = in_git_container(&r, &context, argv).await;
        let stderr = String::from_utf8_lossy(&out.output.stderr);
        assert_ne!(out.output.exit_code, Some(0), "{url}: {stderr}");
        assert!(stderr.contains(refused), "{url}: {stderr}");
    }
    let marker = in_git_container(&r, &context, vec!["ls".into(), "/tmp".into()]).await;
    assert!(
        !String::from_utf8_lossy(&marker.output.stdout).contains("MARKER"),
        "ext:: ran its command"
    );
    r.done().await;
}
