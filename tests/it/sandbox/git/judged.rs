//! A fetch is judged by the remote its repository names when the call is
//! prepared, and reaches exactly that remote: a fetch from a host on
//! `[sandbox.git] allow-hosts` runs without asking in default mode, one
//! from elsewhere asks, and a repository whose remote changed between the
//! decision and the run fetches nothing from the new one.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use warden_api::{
    Backend as _, BackendCall, CallLimits, CallRequest, FsAccess, Grants, ToolHost as _,
};
use warden_gate::{ApprovalAnswer, Gate, PendingApprovals};
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;

use super::fixture::{self, Serve, Server};
use super::remote::{NAME, gateway, rig, served};
use crate::common::{data, error};
use crate::sandbox::{Rig, ws_grant};

/// A gate over the rig's sandbox tools whose agent `d` is standard in
/// default mode, asking through `approvals`.
fn default_mode(r: &Rig, approvals: Arc<PendingApprovals>) -> Gate {
    let config: PolicyConfig = toml::from_str("[agents.d]\nlevel = \"standard\"\n").unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let grants = Grants {
        fs: vec![ws_grant(r.dir.path(), FsAccess::ReadWrite)],
        ..Grants::default()
    };
    let mut b = Gate::builder()
        .env(crate::common::workspace_env())
        .limits(CallLimits {
            deadline: Duration::from_secs(120),
            ..CallLimits::DEFAULT
        })
        .approver(approvals)
        .backend("sandbox", r.tools.clone(), grants)
        .unwrap();
    for a in policy.agents() {
        b = b.agent(a.clone());
    }
    b.build()
}

fn fetch(remote: &str) -> CallRequest {
    let mut context = crate::common::context();
    context.agent = "d".into();
    CallRequest {
        tool: "git_fetch".into(),
        args: json!({"repo": "app", "remote": remote}),
        context,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fetch_is_judged_by_its_remote_and_reaches_only_the_remote_judged() {
    let gw = gateway().await;
    let site = tempfile::tempdir().unwrap();
    served(site.path(), "app", &[("a", "a\n")]);
    let first = Server::start(gw, Serve::Files(site.path().to_owned()));
    let second = Server::start(gw, Serve::Files(site.path().to_owned()));
    let url = |s: &Server| format!("http://{NAME}:{}/app.git", s.addr.port());
    let r = rig("git-judged", &[(NAME, gw), ("other.test", gw)], 64).await;
    data(
        &r.call("git_clone", json!({"url": url(&first), "dest": "app"}))
            .await,
    );
    let approvals = Arc::new(PendingApprovals::new(Duration::from_secs(60)));
    let gate = Arc::new(default_mode(&r, approvals.clone()));

    // origin points at the allowlisted `git.test`: no question asked (an
    // ask would wait for an answer nobody gives).
    let before = first.hits();
    let f = gate.call(fetch("origin")).await;
    assert_eq!(data(&f)["url"], url(&first).as_str(), "{f:?}");
    assert!(first.hits() > before);

    // A remote on a host the operator did not allowlist asks.
    let repo = r.dir.path().join("app");
    fixture::git(
        &repo,
        &[
            "config",
            "-f",
            ".git/config",
            "remote.other.url",
            &format!("http://other.test:{}/app.git", second.addr.port()),
        ],
    );
    let g = gate.clone();
    let call = tokio::spawn(async move { g.call(fetch("other")).await });
    let pending = tokio::time::timeout(Duration::from_secs(60), approvals.next_pending())
        .await
        .expect("a fetch from a host off allow-hosts asks");
    approvals.answer(
        &pending.id,
        ApprovalAnswer::Deny {
            reason: "not that one".into(),
        },
    );
    assert_eq!(error(&call.await.unwrap()).1, "approval_denied");
    assert_eq!(second.hits(), 0);

    // Judged for origin's URL; by the time it runs, origin points at
    // another server (same allowlisted name, another port).
    fixture::git(
        &repo,
        &[
            "config",
            "-f",
            ".git/config",
            "remote.origin.url",
            &url(&second),
        ],
    );
    let spec = r
        .tools
        .tools()
        .into_iter()
        .find(|s| s.name.as_str() == "git_fetch")
        .unwrap();
    let args = json!({"repo": "app", "remote": "origin"});
    let context = fetch("origin").context;
    let grants = Grants {
        fs: vec![ws_grant(r.dir.path(), FsAccess::ReadWrite)],
        ..Grants::default()
    };
    let judged = url(&first);
    let e = r
        .tools
        .invoke(BackendCall {
            tool: &spec,
            args: &args,
            context: &context,
            grants: &grants,
            limits: CallLimits::DEFAULT,
            events: None,
            paths: None,
            cwd: None,
            remote: Some(&judged),
        })
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "remote_changed", "{msg}");
    assert_eq!(second.hits(), 0, "nothing reached the new remote");
    r.done().await;
}
