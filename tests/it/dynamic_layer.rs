//! The toolsmith's dynamic layer in the gate, from the attacker's side: a
//! generated tool never shadows or blocks a static one, and a candidate
//! called in validation's shadow table is invisible to every agent, has
//! its arguments checked before it runs, and cannot take a name; and
//! validation sees how each agent's listing would change.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use warden_api::{
    Backend, BackendCall, BoxFuture, CallHooks, CallRequest, Envelope, ErrorType, ToolHost,
    ToolSpec,
};
use warden_gate::{Gate, ListingChange, PolicyEnv, Registration};
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;

use crate::common;

/// One tool named `name`, counting its runs, answering `says`.
struct Named {
    name: &'static str,
    says: &'static str,
    runs: AtomicU32,
}

impl Backend for Named {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            serde_json::from_value(json!({
                "name": self.name,
                "summary": "Counts words.",
                "description": "Counts words.",
                "category": "analytics",
                "action-type": "code:read",
                "params-schema": {"type": "object", "properties": {"text": {"type": "string"}},
                                  "required": ["text"]},
                "result-schema": {"type": "object"},
                "side-effect": false,
            }))
            .unwrap(),
        ]
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Wasm
    }

    fn invoke<'a>(&'a self, _call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(Envelope::ok(json!({"by": self.says}))))
    }
}

fn named(name: &'static str, says: &'static str) -> Arc<Named> {
    Arc::new(Named {
        name,
        says,
        runs: AtomicU32::new(0),
    })
}

fn reg(owner: &str, backend: Arc<Named>, generated: bool) -> Registration {
    Registration {
        owner: owner.into(),
        source: owner.into(),
        backend,
        grants: Default::default(),
        ceiling: None,
        generated,
    }
}

fn gate() -> Gate {
    let config: PolicyConfig = toml::from_str(
        "[rules]\nallow = [\"*\"]\n\n[agents.test-agent]\nlevel = \"elevated\"\nmode = \"autonomous\"\n",
    )
    .unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let mut builder = Gate::builder().env(PolicyEnv {
        workspace: "/workspace".into(),
        project: "/workspace".into(),
        home: "/home/agent".into(),
    });
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    builder.build()
}

fn by(answer: &Envelope) -> &str {
    match answer {
        Envelope::Ok { data } => data["by"].as_str().unwrap(),
        other => panic!("not a result: {other:?}"),
    }
}

fn error_type(answer: &Envelope) -> ErrorType {
    match answer {
        Envelope::Error { error_type, .. } => *error_type,
        other => panic!("not an error: {other:?}"),
    }
}

fn call(tool: &str, args: serde_json::Value) -> CallRequest {
    CallRequest {
        tool: tool.into(),
        args,
        context: common::context(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_tool_never_shadows_or_blocks_a_static_one() {
    let g = gate();
    g.replace(vec![(
        "gen_words_count".into(),
        Some(reg(
            "gen_words_count",
            named("gen_words_count", "generated"),
            true,
        )),
    )])
    .unwrap();
    let answer = g.call(call("gen_words_count", json!({"text": "a"}))).await;
    assert_eq!(by(&answer), "generated");

    // A static plugin with that tool takes the name; the generated tool
    // leaves the table rather than block the plugin.
    let change = g
        .replace(vec![(
            "words".into(),
            Some(reg("words", named("gen_words_count", "static"), false)),
        )])
        .unwrap();
    assert_eq!(change.added, ["gen_words_count"]);
    assert_eq!(change.removed, ["gen_words_count"]);
    assert_eq!(g.owner_of("gen_words_count").as_deref(), Some("words"));
    let answer = g.call(call("gen_words_count", json!({"text": "a"}))).await;
    assert_eq!(by(&answer), "static");

    // A generated tool under a taken name is refused, changing nothing.
    let err = g
        .replace(vec![(
            "gen_words_count".into(),
            Some(reg(
                "gen_words_count",
                named("gen_words_count", "again"),
                true,
            )),
        )])
        .unwrap_err();
    assert!(err.to_string().contains("gen_words_count"), "{err}");
    assert_eq!(g.owner_of("gen_words_count").as_deref(), Some("words"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_candidate_in_the_shadow_table_is_seen_by_validation_only() {
    let g = gate();
    let candidate = named("gen_text_count", "candidate");
    let shadow = |args| {
        g.shadow_call(
            reg("gen_text_count", candidate.clone(), true),
            call("gen_text_count", args),
            CallHooks::default(),
            "validation of blueprint 1",
        )
    };
    let answer = shadow(json!({"text": "a b"})).await.unwrap();
    assert_eq!(by(&answer), "candidate");
    assert_eq!(candidate.runs.load(Ordering::SeqCst), 1);

    // Arguments the input schema rejects never reach the candidate.
    let answer = shadow(json!({"text": 7})).await.unwrap();
    assert_eq!(error_type(&answer), ErrorType::ArgumentValidationError);
    assert_eq!(candidate.runs.load(Ordering::SeqCst), 1);

    // No agent sees it: to them it is not there.
    let answer = g.call(call("gen_text_count", json!({"text": "a"}))).await;
    assert_eq!(error_type(&answer), ErrorType::UnknownTool);
    assert!(g.spec("gen_text_count").is_none());

    // A candidate whose name is taken is refused before it runs.
    g.replace(vec![(
        "text".into(),
        Some(reg("text", named("gen_text_count", "static"), false)),
    )])
    .unwrap();
    assert!(shadow(json!({"text": "a"})).await.is_err());
    assert_eq!(candidate.runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_candidate_changes_each_listing_by_itself_alone() {
    let g = gate();
    g.replace(vec![(
        "text".into(),
        Some(reg("text", named("text_read", "static"), false)),
    )])
    .unwrap();
    let change = |gained: &[&str], lost: &[&str]| {
        vec![ListingChange {
            agent: "test-agent".into(),
            gained: gained.iter().map(|s| (*s).to_owned()).collect(),
            lost: lost.iter().map(|s| (*s).to_owned()).collect(),
        }]
    };
    // A new tool: each agent gains it and loses nothing.
    let first = reg("gen_text_count", named("gen_text_count", "v1"), true);
    assert_eq!(
        g.shadow_listings(&first).unwrap(),
        change(&["gen_text_count"], &[])
    );
    // A new version of a live tool: no listing changes.
    g.replace(vec![("gen_text_count".into(), Some(first))])
        .unwrap();
    let next = reg("gen_text_count", named("gen_text_count", "v2"), true);
    assert_eq!(g.shadow_listings(&next).unwrap(), change(&[], &[]));
    // A candidate that would take a live tool's place under another
    // name: the agent would lose that tool (validation fails it).
    let renamed = reg("gen_text_count", named("gen_text_total", "v3"), true);
    assert_eq!(
        g.shadow_listings(&renamed).unwrap(),
        change(&["gen_text_total"], &["gen_text_count"])
    );
    // Nothing was changed by looking.
    assert!(g.spec("gen_text_total").is_none());
    assert!(g.spec("gen_text_count").is_some());
}
