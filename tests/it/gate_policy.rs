//! The gate with real policies: decisions before dispatch, denials an
//! agent can act on, asks answered by a person, per-agent tool lists, and
//! symlinks that cannot carry a path past a deny rule.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use warden_api::{CallRequest, FsAccess, ToolHost};
use warden_gate::{ApprovalAnswer, Gate, PendingApprovals};
use warden_policy::config::PolicyConfig;
use warden_policy::{AgentPolicy, Mode, Policy, RuleSet};

use crate::common::{self, error};

fn request(agent: &str, tool: &str, args: Value) -> CallRequest {
    let mut context = common::context();
    context.agent = agent.into();
    CallRequest {
        tool: tool.into(),
        args,
        context,
    }
}

fn policy(toml_text: &str) -> Policy {
    let config: PolicyConfig = toml::from_str(toml_text).unwrap();
    Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap()
}

async fn gate_with(
    policy: &Policy,
    approver: Arc<PendingApprovals>,
    dir: &std::path::Path,
) -> Gate {
    let fs = common::fs_plugin().await;
    let probe = common::probe().await;
    let grants = common::grant(dir, FsAccess::ReadWrite);
    let mut b = Gate::builder()
        .env(crate::common::workspace_env())
        .approver(approver)
        .backend("fs", Arc::new(fs), grants.clone())
        .unwrap()
        .backend("probe", Arc::new(probe), grants)
        .unwrap();
    for a in policy.agents() {
        b = b.agent(a.clone());
    }
    b.build()
}

const POLICY: &str = r#"
[rules]
deny = ["fs_read(/secrets/**)"]

[agents.reader]
level = "sandboxed"
mode = "plan"

[agents.writer]
level = "standard"
rules = { allow = ["fs_write(/notes/**)"] }

[agents.boss]
level = "elevated"
mode = "autonomous"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn tool_lists_differ_by_agent() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate_with(
        &policy(POLICY),
        Arc::new(PendingApprovals::new(Duration::from_secs(5))),
        dir.path(),
    )
    .await;
    let names = |agent: &str| {
        gate.list_tools(agent)
            .iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    // code-execution is granted to every level; file-system too.
    assert_eq!(
        names("reader"),
        [
            "fs_delete",
            "fs_edit",
            "fs_list",
            "fs_read",
            "fs_write",
            "probe_run"
        ]
    );
    assert!(names("nobody").is_empty());
    let p = policy("[agents.narrow]\nlevel = \"elevated\"\ndenied = [\"fs_*\"]\n");
    let gate = gate_with(
        &p,
        Arc::new(PendingApprovals::new(Duration::from_secs(5))),
        dir.path(),
    )
    .await;
    assert_eq!(
        gate.list_tools("narrow")
            .iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>(),
        ["probe_run"]
    );
    // Defence in depth: a tool the agent cannot see is denied at call time.
    let e = gate
        .call(request("narrow", "fs_read", json!({"path": "a"})))
        .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("PermissionDenied", "denied_by_category")
    );
    assert!(msg.contains("denied list"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn denials_name_the_rule_and_never_reach_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("secrets")).unwrap();
    std::fs::write(dir.path().join("secrets/key"), "k").unwrap();
    let gate = gate_with(
        &policy(POLICY),
        Arc::new(PendingApprovals::new(Duration::from_secs(5))),
        dir.path(),
    )
    .await;
    let e = gate
        .call(request("boss", "fs_read", json!({"path": "secrets/key"})))
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "denied_by_rule");
    assert!(msg.contains("fs_read(/secrets/**)"), "{msg}");

    // A symlink elsewhere in the workspace resolves into the denied tree.
    std::os::unix::fs::symlink(dir.path().join("secrets"), dir.path().join("innocent")).unwrap();
    let e = gate
        .call(request("boss", "fs_read", json!({"path": "innocent/key"})))
        .await;
    assert_eq!(error(&e).1, "denied_by_rule");

    // Plan mode: no side effects, and the file is untouched.
    let e = gate
        .call(request(
            "reader",
            "fs_write",
            json!({"path": "x.txt", "content": "x"}),
        ))
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "denied_by_mode");
    assert!(msg.contains("plan mode"), "{msg}");
    assert!(!dir.path().join("x.txt").exists());

    let e = gate
        .call(request("stranger", "fs_read", json!({"path": "a"})))
        .await;
    assert!(error(&e).2.contains("not configured"));
}

#[tokio::test(flavor = "multi_thread")]
async fn asks_wait_for_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let approvals = Arc::new(PendingApprovals::new(Duration::from_secs(10)));
    let gate = gate_with(&policy(POLICY), approvals.clone(), dir.path()).await;

    // Allowed by rule: no ask.
    let e = gate
        .call(request(
            "writer",
            "fs_write",
            json!({"path": "notes/a.md", "content": "a", "create_dirs": true}),
        ))
        .await;
    assert!(e.is_ok(), "{e:?}");

    // Outside the rule: asks; answered "allow once".
    let call = spawn_call(&gate, json!({"path": "b.md", "content": "b"}));
    let pending = wait_for_pending(&approvals).await;
    assert_eq!(pending.call, "fs_write(b.md)");
    assert_eq!(pending.suggested_rule, "fs_write(//workspace/b.md)");
    assert!(approvals.answer(&pending.id, ApprovalAnswer::AllowOnce));
    assert!(call.await.unwrap().is_ok());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.md")).unwrap(),
        "b"
    );

    // Denied by the person: the envelope says so and nothing is written.
    let call = spawn_call(&gate, json!({"path": "c.md", "content": "c"}));
    let pending = wait_for_pending(&approvals).await;
    approvals.answer(
        &pending.id,
        ApprovalAnswer::Deny {
            reason: "not today".into(),
        },
    );
    let e = call.await.unwrap();
    let (_, code, msg) = error(&e);
    assert_eq!(code, "approval_denied");
    assert!(msg.contains("not today"), "{msg}");
    assert!(!dir.path().join("c.md").exists());

    // "Always allow" with a broadened rule from an operator: the next
    // matching call runs without asking.
    let call = spawn_call(
        &gate,
        json!({"path": "d/1.md", "content": "1", "create_dirs": true}),
    );
    let pending = wait_for_pending(&approvals).await;
    approvals.answer(
        &pending.id,
        ApprovalAnswer::AlwaysAllow {
            rule: "fs_write(/d/**)".into(),
            by: warden_api::Answerer::Operator(warden_api::Attribution {
                actor: "ops".into(),
                confirm: true,
                reason: Some("the docs tree".into()),
            }),
        },
    );
    assert!(call.await.unwrap().is_ok());
    let e = gate
        .call(request(
            "writer",
            "fs_write",
            json!({"path": "d/2.md", "content": "2"}),
        ))
        .await;
    assert!(e.is_ok(), "the added rule applies: {e:?}");
    assert!(approvals.pending().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_leaves_no_pending_approval() {
    let dir = tempfile::tempdir().unwrap();
    let approvals = Arc::new(PendingApprovals::new(Duration::from_secs(30)));
    let gate = gate_with(&policy(POLICY), approvals.clone(), dir.path()).await;
    let call = spawn_call(&gate, json!({"path": "gone.md", "content": "x"}));
    wait_for_pending(&approvals).await;
    call.abort();
    let _ = call.await;
    assert!(approvals.pending().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn unanswered_asks_expire_as_denials() {
    let dir = tempfile::tempdir().unwrap();
    let approvals = Arc::new(PendingApprovals::new(Duration::from_millis(200)));
    let gate = gate_with(&policy(POLICY), approvals, dir.path()).await;
    let e = gate
        .call(request(
            "writer",
            "fs_write",
            json!({"path": "late.md", "content": "x"}),
        ))
        .await;
    let (_, code, msg) = error(&e);
    assert_eq!(code, "approval_denied");
    assert!(msg.contains("expired"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn decisions_come_before_argument_validation_and_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate_with(
        &policy(POLICY),
        Arc::new(PendingApprovals::new(Duration::from_secs(5))),
        dir.path(),
    )
    .await;
    // An allowed read with bad arguments is an argument error...
    let e = gate
        .call(request(
            "boss",
            "fs_read",
            json!({"path": "a", "limit": "x"}),
        ))
        .await;
    assert_eq!(error(&e).0, "ArgumentValidationError");
    // ...while a denied one is a denial: the agent learns nothing about the schema.
    let e = gate
        .call(request(
            "boss",
            "fs_read",
            json!({"path": "secrets/k", "limit": "x"}),
        ))
        .await;
    assert_eq!(error(&e).0, "PermissionDenied");
    let rules_only = AgentPolicy::rules_only("x", Mode::Default, RuleSet::default());
    assert_eq!(rules_only.mode, Mode::Default);
}

/// Starts a call by `writer` that will wait for an answer.
fn spawn_call(gate: &Gate, args: Value) -> tokio::task::JoinHandle<warden_api::Envelope> {
    let gate = gate.clone();
    tokio::spawn(async move { gate.call(request("writer", "fs_write", args)).await })
}

async fn wait_for_pending(approvals: &PendingApprovals) -> warden_gate::ApprovalRequest {
    tokio::time::timeout(Duration::from_secs(30), approvals.next_pending())
        .await
        .expect("an approval becomes pending")
}
