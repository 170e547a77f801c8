//! A version-control call's operation reaches the decision through the
//! gate: the backend declares it per call (a push with `force` is a force
//! push), so the level's git sub-constraint and the force-push circuit
//! breaker judge what the call does, not only its action type.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use warden_api::{
    Backend, BackendCall, BoxFuture, CallRequest, Envelope, Grants, ToolHost, ToolSpec, VcsFacts,
    VcsOperation,
};
use warden_gate::{ApprovalAnswer, Gate, PendingApprovals};
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;

use crate::common::{self, error};

/// A push tool that records the calls reaching it and declares a force
/// push when `force` is true.
#[derive(Default)]
struct Pusher(Mutex<Vec<Value>>);

impl Backend for Pusher {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            serde_json::from_value(json!({
                "name": "git_push",
                "summary": "Pushes a branch.",
                "description": "Pushes `branch` to `remote`.",
                "category": "version-control",
                "action-type": "vcs:push",
                "params-schema": {"type": "object", "properties": {
                    "remote": {"type": "string"}, "branch": {"type": "string"},
                    "force": {"type": "boolean"}}},
                "result-schema": {"type": "object"},
                "side-effect": true,
                "specifier-template": "{remote}:{branch}",
            }))
            .unwrap(),
        ]
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Container
    }

    fn vcs_operation(&self, _tool: &str, args: &Value, _grants: &Grants) -> Option<VcsFacts> {
        Some(VcsFacts::local(if args["force"] == json!(true) {
            VcsOperation::ForcePush
        } else {
            VcsOperation::Push
        }))
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        self.0.lock().unwrap().push(call.args.clone());
        Box::pin(std::future::ready(Envelope::ok(json!({}))))
    }
}

fn gate(toml_text: &str, pusher: Arc<Pusher>, approvals: Arc<PendingApprovals>) -> Gate {
    let config: PolicyConfig = toml::from_str(toml_text).unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let mut b = Gate::builder()
        .env(crate::common::workspace_env())
        .approver(approvals)
        .backend("git", pusher, Grants::default())
        .unwrap();
    for a in policy.agents() {
        b = b.agent(a.clone());
    }
    b.build()
}

fn push(agent: &str, force: bool) -> CallRequest {
    let mut context = common::context();
    context.agent = agent.into();
    CallRequest {
        tool: "git_push".into(),
        args: json!({"remote": "origin", "branch": "main", "force": force}),
        context,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_force_push_asks_in_autonomous_mode_and_a_plain_push_does_not() {
    let pusher = Arc::new(Pusher::default());
    let approvals = Arc::new(PendingApprovals::new(Duration::from_secs(30)));
    let gate = gate(
        "[agents.a]\nlevel = \"standard\"\nmode = \"autonomous\"\nrules = { allow = [\"git_push(origin:*)\"] }\n",
        pusher.clone(),
        approvals.clone(),
    );
    let e = gate.call(push("a", false)).await;
    assert!(e.is_ok(), "{e:?}");
    assert_eq!(pusher.0.lock().unwrap().len(), 1);

    let gate = Arc::new(gate);
    let g = gate.clone();
    let call = tokio::spawn(async move { g.call(push("a", true)).await });
    let pending = tokio::time::timeout(Duration::from_secs(30), approvals.next_pending())
        .await
        .expect("the force push asks");
    assert!(pending.reason.contains("force push"), "{}", pending.reason);
    assert_eq!(
        pusher.0.lock().unwrap().len(),
        1,
        "nothing ran before the answer"
    );
    approvals.answer(
        &pending.id,
        ApprovalAnswer::Deny {
            reason: "no rewriting main".into(),
        },
    );
    let e = call.await.unwrap();
    assert_eq!(error(&e).1, "approval_denied");
    assert_eq!(
        pusher.0.lock().unwrap().len(),
        1,
        "the force push never ran"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn read_and_branch_refuses_every_push() {
    let pusher = Arc::new(Pusher::default());
    let approvals = Arc::new(PendingApprovals::new(Duration::from_secs(5)));
    let gate = gate(
        "[agents.r]\nlevel = \"restricted\"\nmode = \"autonomous\"\nrules = { allow = [\"git_push\"] }\n",
        pusher.clone(),
        approvals.clone(),
    );
    for force in [false, true] {
        let e = gate.call(push("r", force)).await;
        let (_, code, msg) = error(&e);
        assert_eq!(code, "denied_by_constraint", "{msg}");
        assert!(msg.contains("read-and-branch"), "{msg}");
    }
    assert!(approvals.pending().is_empty(), "refused, not asked");
    assert!(pusher.0.lock().unwrap().is_empty());
}

/// warden-vcs's operation map (action type, level permissions, circuit
/// breaker) and what the policy judges for the sandbox's git tools agree,
/// operation by operation: one table, not two that drift.
#[test]
fn the_core_map_and_the_policy_table_agree() {
    use warden_api::Backend as _;
    use warden_policy::GitAccess;
    use warden_vcs::{GitLevel, GitOp, Prompt, ResetMode, vcs_action};
    let tools =
        warden_sandbox::SandboxTools::new(warden_sandbox::SandboxConfig::default()).unwrap();
    let specs = tools.tools();
    let s = |v: &str| v.to_owned();
    let cases: Vec<(GitOp, &str, Value)> = vec![
        (GitOp::Status { paths: vec![] }, "git_status", json!({})),
        (
            GitOp::Log {
                rev: None,
                max_count: 1,
                paths: vec![],
            },
            "git_log",
            json!({}),
        ),
        (
            GitOp::Diff {
                from: None,
                to: None,
                staged: false,
                paths: vec![],
            },
            "git_diff",
            json!({}),
        ),
        (
            GitOp::Show { rev: s("HEAD") },
            "git_show",
            json!({"rev": "HEAD"}),
        ),
        (GitOp::BranchList, "git_branch", json!({"op": "list"})),
        (
            GitOp::BranchCreate {
                name: s("x"),
                start: None,
            },
            "git_branch",
            json!({"op": "create", "name": "x"}),
        ),
        (
            GitOp::Switch {
                name: s("x"),
                create: false,
            },
            "git_branch",
            json!({"op": "switch", "name": "x"}),
        ),
        (
            GitOp::BranchDelete {
                name: s("x"),
                force: false,
            },
            "git_branch",
            json!({"op": "delete", "name": "x"}),
        ),
        (
            GitOp::Commit { message: s("m") },
            "git_commit",
            json!({"message": "m"}),
        ),
        (
            GitOp::Restore {
                paths: vec![s("a")],
                staged: false,
                source: None,
            },
            "git_restore",
            json!({"paths": ["a"]}),
        ),
        (
            GitOp::Reset {
                mode: ResetMode::Hard,
                rev: s("HEAD"),
            },
            "git_reset",
            json!({"mode": "hard", "rev": "HEAD"}),
        ),
        (
            GitOp::Clone {
                dest: s("d"),
                depth: None,
            },
            "git_clone",
            json!({"url": "https://x/y", "dest": "d"}),
        ),
        (
            GitOp::Fetch {
                remote: s("origin"),
            },
            "git_fetch",
            json!({"remote": "origin"}),
        ),
        (
            GitOp::Push {
                remote: s("o"),
                branch: s("b"),
                force: false,
            },
            "git_push",
            json!({"remote": "o", "branch": "b"}),
        ),
        (
            GitOp::Push {
                remote: s("o"),
                branch: s("b"),
                force: true,
            },
            "git_push",
            json!({"remote": "o", "branch": "b", "force": true}),
        ),
    ];
    for (op, tool, args) in cases {
        let core = vcs_action(&op, None, None);
        let declared = tools
            .vcs_operation(tool, &args, &Grants::default())
            .map(|f| warden_gate::vcs_op(f.operation))
            .unwrap();
        let spec = specs.iter().find(|t| t.name.as_str() == tool).unwrap();
        assert_eq!(spec.action_type.as_str(), core.action_type, "{op:?}");
        for (level, access) in [
            (GitLevel::LocalOnly, GitAccess::LocalOnly),
            (GitLevel::ReadAndBranch, GitAccess::ReadAndBranch),
            (GitLevel::Full, GitAccess::Full),
        ] {
            assert_eq!(
                core.permitted_at(level),
                declared.permitted_at(access),
                "{op:?} at {level:?}"
            );
        }
        assert_eq!(
            core.prompt == Prompt::CircuitBreaker,
            declared == warden_policy::VcsOp::ForcePush,
            "{op:?}"
        );
    }
}
