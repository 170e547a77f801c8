//! `tool:create` through the gate, from the attacker's side: an
//! autonomous agent whose rules allow everything calls a tool that
//! creates tools, and its own client answers "allow once". The ask never
//! reaches the client: only the gate's own approver (the operators'
//! channel) answers it, and nothing runs without that answer.

use std::sync::{Arc, Mutex};

use serde_json::json;
use warden_api::{
    ApprovalAnswer, ApprovalRequest, Approver, Backend, BackendCall, BoxFuture, CallHooks,
    CallRequest, Envelope, ToolHost, ToolSpec,
};
use warden_gate::Gate;
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;

use crate::common;

struct Says {
    answer: ApprovalAnswer,
    asked: Mutex<u32>,
}

impl Approver for Says {
    fn ask(&self, _request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        *self.asked.lock().unwrap() += 1;
        Box::pin(std::future::ready(self.answer.clone()))
    }
}

fn says(answer: ApprovalAnswer) -> Arc<Says> {
    Arc::new(Says {
        answer,
        asked: Mutex::new(0),
    })
}

/// A tool that creates tools, counting its runs.
struct Maker(Mutex<u32>);

impl Backend for Maker {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            serde_json::from_value(json!({
                "name": "maker_create",
                "summary": "Creates a tool.",
                "description": "Creates a tool.",
                "category": "code-execution",
                "action-type": "tool:create",
                "params-schema": {"type": "object"},
                "result-schema": {"type": "object"},
                "side-effect": true,
            }))
            .unwrap(),
        ]
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Wasm
    }

    fn invoke<'a>(&'a self, _call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        *self.0.lock().unwrap() += 1;
        Box::pin(std::future::ready(Envelope::ok(json!({"made": true}))))
    }
}

fn gate(maker: Arc<Maker>, operators: Arc<Says>) -> Gate {
    let config: PolicyConfig = toml::from_str(
        "[rules]\nallow = [\"*\"]\n\n[agents.writer]\nlevel = \"elevated\"\nmode = \"autonomous\"\n",
    )
    .unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let mut builder = Gate::builder()
        .env(crate::common::workspace_env())
        .backend("maker", maker, Default::default())
        .unwrap()
        .approver(operators);
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    builder.build()
}

fn call() -> CallRequest {
    let mut context = common::context();
    context.agent = "writer".into();
    CallRequest {
        tool: "maker_create".into(),
        args: json!({}),
        context,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_create_is_answered_by_operators_only_in_every_mode() {
    // Nobody on the operators' channel says yes: the client's "allow
    // once" changes nothing, and the tool never runs.
    let maker = Arc::new(Maker(Mutex::new(0)));
    let operators = says(ApprovalAnswer::Deny {
        reason: "no".into(),
    });
    let g = gate(maker.clone(), operators.clone());
    let client = says(ApprovalAnswer::AllowOnce);
    let hooks = CallHooks {
        approver: Some(client.clone()),
        ..CallHooks::default()
    };
    let answer = g.call_with(call(), hooks).await;
    assert!(!answer.is_ok(), "{answer:?}");
    assert_eq!(
        *client.asked.lock().unwrap(),
        0,
        "the client is never asked"
    );
    assert_eq!(*operators.asked.lock().unwrap(), 1);
    assert_eq!(*maker.0.lock().unwrap(), 0, "nothing ran");

    // An operator's yes lets it run.
    let operators = says(ApprovalAnswer::AllowOnce);
    let g = gate(maker.clone(), operators.clone());
    let answer = g.call_with(call(), CallHooks::default()).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(*maker.0.lock().unwrap(), 1);
}

/// A desk that counts what reaches it.
struct Desk(Mutex<u32>);

impl warden_api::BlueprintDesk for Desk {
    fn propose(
        &self,
        _agent: &str,
        _session: &str,
        _blueprint: serde_json::Value,
    ) -> Result<warden_api::ProposedBlueprint, warden_api::ProposalRefused> {
        *self.0.lock().unwrap() += 1;
        Ok(warden_api::ProposedBlueprint {
            id: 1,
            name: "gen_words_count".into(),
            state: "pending".into(),
            blueprint_sha256: "sha256:x".into(),
        })
    }
}

/// An agent the operator keeps from proposing (its denied list), and an
/// agent nobody configured, reach no desk.
#[tokio::test(flavor = "multi_thread")]
async fn proposals_respect_the_agents_denied_list() {
    let config: PolicyConfig = toml::from_str(
        "[agents.writer]\nlevel = \"elevated\"\n\n\
         [agents.kept]\nlevel = \"elevated\"\ndenied = [\"toolsmith_*\"]\n",
    )
    .unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let desk = Arc::new(Desk(Mutex::new(0)));
    let mut builder = Gate::builder().toolsmith(desk.clone());
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    let g = builder.build();
    let propose = |agent: &str| {
        let mut context = common::context();
        context.agent = agent.into();
        CallRequest {
            tool: "toolsmith_propose".into(),
            args: json!({"blueprint": {}}),
            context,
        }
    };
    for agent in ["kept", "stranger"] {
        let answer = g.call_with(propose(agent), CallHooks::default()).await;
        assert!(!answer.is_ok(), "{agent}: {answer:?}");
    }
    assert_eq!(*desk.0.lock().unwrap(), 0);
    let answer = g.call_with(propose("writer"), CallHooks::default()).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(*desk.0.lock().unwrap(), 1);
}

/// The policy refuses allow rules for the very tool the host offers.
#[test]
fn the_proposal_tool_is_a_breaker_tool() {
    assert!(warden_policy::BREAKER_TOOLS.contains(&warden_api::TOOLSMITH_PROPOSE));
}
