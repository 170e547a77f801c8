//! Lifecycle strategies against the real engine: per-agent reuse and
//! grace expiry, per-call cleanup, concurrency, unresolved owners, and
//! shutdown.

use std::time::Duration;

use serde_json::json;
use warden_api::{CallContext, FsAccess, Grants, ToolHost};
use warden_sandbox::images::ImageKind;
use warden_sandbox::spec::HOST_ID_LABEL;
use warden_sandbox::{RunRequest, Sandbox, SandboxConfig, Strategy};

use super::{rig, rig_clocked, rig_with};
use crate::common::{ManualClock, data};

fn container(d: &serde_json::Value) -> String {
    d["container"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn per_agent_reuses_a_warm_container_until_the_grace_period_ends() {
    let config = SandboxConfig {
        grace_period_secs: 5,
        ..SandboxConfig::default()
    };
    let clock = ManualClock::at(1_000_000);
    let r = rig_clocked("grace", config, clock.clone()).await;
    let first = r.sh("echo one > /tmp/state").await;
    let second = r.sh("cat /tmp/state").await;
    assert_eq!(
        container(&first),
        container(&second),
        "the warm container is reused"
    );
    assert_eq!(
        second["stdout"], "one\n",
        "and keeps its state between calls"
    );
    assert_eq!(second["strategy"], "per-agent");
    assert_eq!(r.containers().await.len(), 1);
    // Calls keep it warm: idle 4 s of a 5 s grace period, used, then idle
    // 4 s again, it stays.
    clock.advance(4_000);
    assert!(
        r.sandbox.0.reap().await.is_empty(),
        "idle within the grace period"
    );
    // Not a read-only command: those run in the agent's reader, and this
    // is about the writer.
    r.sh("touch /tmp/used").await;
    clock.advance(4_000);
    assert!(
        r.sandbox.0.reap().await.is_empty(),
        "used within the grace period"
    );
    assert_eq!(r.containers().await.len(), 1);
    // Idle past the grace period: removed.
    clock.advance(1_000);
    // (The sandbox's own periodic pass may get there first; either way the
    // pass has finished when `reap` returns.)
    let reaped = r.sandbox.0.reap().await;
    assert!(
        reaped.is_empty() || (reaped.len() == 1 && reaped[0].starts_with(&container(&first))),
        "only the idle container is reaped: {reaped:?}"
    );
    assert!(
        r.containers().await.is_empty(),
        "removed once idle for the grace period"
    );
    let third = r.sh("cat /tmp/state 2>/dev/null; echo fresh").await;
    assert_ne!(container(&third), container(&first));
    assert_eq!(third["stdout"], "fresh\n");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn per_call_leaves_nothing_behind() {
    let config = SandboxConfig {
        strategy: Strategy::PerCall,
        ..SandboxConfig::default()
    };
    let r = rig("percall", config).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let d = r.sh("echo hi > /tmp/x; cat /tmp/x").await;
        assert_eq!(d["strategy"], "per-call");
        assert!(
            r.containers().await.is_empty(),
            "removed when the call returned"
        );
        seen.push(container(&d));
    }
    seen.dedup();
    assert_eq!(seen.len(), 3, "a fresh container per call");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn twenty_concurrent_calls_share_one_container_per_agent() {
    let r = rig("concurrent", SandboxConfig::default()).await;
    let requests = (0..20)
        .map(|i| {
            r.request(
                "terminal_exec",
                json!({"command": format!("echo {i}; hostname")}),
            )
        })
        .collect();
    let results = r.gate.call_batch(requests, None).await;
    let mut hosts: Vec<String> = results
        .iter()
        .map(|e| {
            data(e)["stdout"]
                .as_str()
                .unwrap()
                .lines()
                .nth(1)
                .unwrap()
                .to_owned()
        })
        .collect();
    hosts.dedup();
    assert_eq!(hosts.len(), 1, "every call ran in one container: {hosts:?}");
    assert_eq!(r.containers().await.len(), 1);
    r.done().await;
}

fn ctx(agent: &str, task: Option<&str>) -> CallContext {
    CallContext {
        principal: None,
        agent: agent.into(),
        session: "s".into(),
        task: task.map(Into::into),
        request_id: "r".into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn per_task_owners_and_unresolved_owners() {
    let config = SandboxConfig {
        strategy: Strategy::PerTask,
        grace_period_secs: 300,
        ..SandboxConfig::default()
    };
    let r = rig("pertask", config).await;
    let grants = Grants::default();
    let run = |context: CallContext| {
        let sandbox = r.sandbox.clone();
        let grants = grants.clone();
        async move {
            sandbox
                .run(RunRequest {
                    kind: ImageKind::Base,
                    context: &context,
                    grants: &grants,
                    argv: vec!["hostname".into()],
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
    };
    // No task id: this one call runs per-call.
    let lone = run(ctx(&r.agent, None)).await;
    assert_eq!(lone.strategy, Strategy::PerCall);
    assert!(r.containers().await.is_empty());
    // A task's calls share its container until the task ends.
    let a = run(ctx(&r.agent, Some("t1"))).await;
    let b = run(ctx(&r.agent, Some("t1"))).await;
    assert_eq!(a.strategy, Strategy::PerTask);
    assert_eq!(a.container, b.container);
    let other = run(ctx(&r.agent, Some("t2"))).await;
    assert_ne!(other.container, a.container);
    assert_eq!(r.containers().await.len(), 2);
    r.sandbox.end_task("t1").await;
    assert_eq!(r.containers().await, vec![other.container.clone()]);
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_removes_every_container_the_host_owns() {
    let r = rig_with(
        "shutdown",
        SandboxConfig::default(),
        FsAccess::Read,
        &[],
        "",
    )
    .await;
    r.sh("true").await;
    let other = ctx("someone-else", None);
    let env = r
        .gate
        .call(warden_api::CallRequest {
            tool: "terminal_exec".into(),
            args: json!({"command": "true"}),
            context: other,
        })
        .await;
    assert!(!env.is_ok(), "an unknown agent is refused by the gate");
    let mine = r
        .sandbox
        .0
        .docker()
        .list_managed(&[(HOST_ID_LABEL, r.sandbox.0.host_id())])
        .await
        .unwrap();
    assert_eq!(mine.len(), 1);
    r.sandbox.shutdown().await;
    let left = r
        .sandbox
        .0
        .docker()
        .list_managed(&[(HOST_ID_LABEL, r.sandbox.0.host_id())])
        .await
        .unwrap();
    assert!(left.is_empty());
    let after = r.call("terminal_exec", json!({"command": "true"})).await;
    assert!(!after.is_ok(), "no container after shutdown");
    r.done().await;
}
