//! What an "always allow" answer may add, through the gate with a real
//! state database: from the person behind the agent's client only the
//! asked call (anything broader is refused, audited, and runs nothing),
//! from an operator any rule (added and audited with actor and reason).
//! Circuit breakers and high-risk actions never become "always" from a
//! client.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use warden_api::{
    Answerer, ApprovalAnswer, ApprovalRequest, Approver, Attribution, Backend, BackendCall,
    BoxFuture, CallHooks, CallRequest, Envelope, FsAccess, ToolHost, ToolSpec,
};
use warden_gate::Gate;
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;
use warden_store::{Hooks, SqliteStore, Store, host_key};

use crate::common;

/// A person who gives one fixed answer, and remembers what was asked.
struct Person {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Approver for Person {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        self.asked.lock().unwrap().push(request);
        Box::pin(std::future::ready(self.answer.clone()))
    }
}

/// A deployment tool (high-risk action) that records that it ran.
struct Deployer(Mutex<u32>);

impl Backend for Deployer {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            serde_json::from_value(json!({
                "name": "ship_deploy",
                "summary": "Deploys a build.",
                "description": "Deploys a build to an environment.",
                "category": "deployment",
                "action-type": "deploy:production",
                "params-schema": {"type": "object", "properties": {"env": {"type": "string"}}},
                "result-schema": {"type": "object"},
                "side-effect": true,
                "specifier-template": "{env}",
            }))
            .unwrap(),
        ]
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Wasm
    }

    fn invoke<'a>(&'a self, _call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        *self.0.lock().unwrap() += 1;
        Box::pin(std::future::ready(Envelope::ok(json!({"deployed": true}))))
    }
}

struct Fixture {
    gate: Gate,
    store: Arc<dyn Store>,
    deployer: Arc<Deployer>,
    dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.path().join("warden.db"), key).unwrap());
    let config: PolicyConfig = toml::from_str("[agents.writer]\nlevel = \"elevated\"\n").unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let deployer = Arc::new(Deployer(Mutex::new(0)));
    let mut builder = Gate::builder()
        .env(crate::common::workspace_env())
        .backend(
            "fs",
            Arc::new(common::fs_plugin().await),
            common::grant(&dir.path().join("ws"), FsAccess::ReadWrite),
        )
        .unwrap()
        .backend("ship", deployer.clone(), Default::default())
        .unwrap()
        .journal(Arc::new(Hooks(store.clone())));
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    Fixture {
        gate: builder.build(),
        store,
        deployer,
        dir,
    }
}

fn request(tool: &str, args: Value) -> CallRequest {
    let mut context = common::context();
    context.agent = "writer".into();
    CallRequest {
        tool: tool.into(),
        args,
        context,
    }
}

fn operator() -> Answerer {
    Answerer::Operator(Attribution {
        actor: "dana".into(),
        confirm: true,
        reason: Some("the release needs it".into()),
    })
}

async fn answered(f: &Fixture, call: &CallRequest, answer: ApprovalAnswer) -> (Envelope, Person) {
    let person = Arc::new(Person {
        answer,
        asked: Mutex::new(Vec::new()),
    });
    let hooks = CallHooks {
        approver: Some(person.clone()),
        ..CallHooks::default()
    };
    let envelope = f.gate.call_with(call.clone(), hooks).await;
    let person = Arc::try_unwrap(person).ok().unwrap();
    (envelope, person)
}

fn audit_kinds(store: &dyn Store) -> Vec<(String, Value)> {
    store
        .records_after(0, 10_000)
        .unwrap()
        .into_iter()
        .map(|r| (r.kind, r.event))
        .collect()
}

/// A call, the rule an answer adds, and what the case is.
type Case = (fn() -> CallRequest, &'static str, &'static str);

#[tokio::test(flavor = "multi_thread")]
async fn a_client_answer_adds_only_the_asked_call_and_an_operator_any_rule() {
    let write = || {
        request(
            "fs_write",
            json!({"path": "notes/a.txt", "content": "x", "create_dirs": true}),
        )
    };
    let breaker = || request("fs_delete", json!({"path": "/workspace"}));
    let deploy = || request("ship_deploy", json!({"env": "production"}));
    // (call, rule the answer adds, what the call is)
    let cases: Vec<Case> = vec![
        (write, "*", "a bare `*`"),
        (write, "fs_delete(//workspace/notes/a.txt)", "another tool"),
        (write, "fs_*", "a tool glob"),
        (write, "fs_write(/**)", "a broader specifier"),
        (
            write,
            "fs_write(//workspace/notes/*)",
            "a broader specifier",
        ),
        (
            breaker,
            "fs_delete(//workspace)",
            "a circuit breaker's exact call",
        ),
        (
            deploy,
            "ship_deploy(production)",
            "a high-risk action's exact call",
        ),
    ];
    for (call, rule, what) in &cases {
        // From the client: refused, nothing runs, nothing is added.
        let f = fixture().await;
        let client = ApprovalAnswer::AlwaysAllow {
            rule: (*rule).into(),
            by: Answerer::Client,
        };
        let (envelope, person) = answered(&f, &call(), client).await;
        let (_, code, message) = common::error(&envelope);
        assert_eq!(
            code, "approval_response_refused",
            "{what} `{rule}`: {message}"
        );
        assert_eq!(person.asked.lock().unwrap().len(), 1);
        assert!(!f.dir.path().join("ws/notes/a.txt").exists(), "{what}");
        assert_eq!(*f.deployer.0.lock().unwrap(), 0, "{what}");
        let kinds = audit_kinds(f.store.as_ref());
        assert!(
            kinds
                .iter()
                .any(|(k, e)| k == "response-refused" && e["reason"].as_str().is_some()),
            "{what}: the refusal is audited: {kinds:?}"
        );
        assert!(!kinds.iter().any(|(k, _)| k == "rule-added"), "{what}");
        assert!(f.store.rules().unwrap().is_empty(), "{what}");

        // From an operator: the rule is added, with who and why.
        let f = fixture().await;
        let op = ApprovalAnswer::AlwaysAllow {
            rule: (*rule).into(),
            by: operator(),
        };
        let (envelope, _) = answered(&f, &call(), op).await;
        if *what != "a circuit breaker's exact call" {
            assert!(
                envelope.is_ok(),
                "{what} `{rule}` from an operator: {envelope:?}"
            );
        }
        let added = audit_kinds(f.store.as_ref())
            .into_iter()
            .find(|(k, _)| k == "rule-added")
            .unwrap_or_else(|| panic!("{what}: the rule is audited"));
        assert_eq!(added.1["rule"], *rule);
        assert_eq!(added.1["by"]["actor"], "dana");
        assert_eq!(added.1["by"]["reason"], "the release needs it");
        assert_eq!(f.store.rules().unwrap().len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_exact_call_is_the_clients_to_allow_for_good() {
    let f = fixture().await;
    let call = request("fs_write", json!({"path": "a.txt", "content": "x"}));
    let probe = answered(
        &f,
        &call,
        ApprovalAnswer::Deny {
            reason: "look".into(),
        },
    )
    .await
    .1;
    let asked = probe.asked.lock().unwrap()[0].clone();
    assert!(asked.always_offered);
    assert_eq!(asked.arguments, json!({"path": "a.txt", "content": "x"}));
    let exact = ApprovalAnswer::AlwaysAllow {
        rule: asked.suggested_rule.clone(),
        by: Answerer::Client,
    };
    let (envelope, _) = answered(&f, &call, exact).await;
    assert!(envelope.is_ok(), "{envelope:?}");
    // The same call runs without asking; another file still asks.
    let (again, person) = answered(
        &f,
        &call,
        ApprovalAnswer::Deny {
            reason: "no".into(),
        },
    )
    .await;
    assert!(again.is_ok());
    assert!(person.asked.lock().unwrap().is_empty());
    let other = request("fs_write", json!({"path": "b.txt", "content": "x"}));
    let (denied, person) = answered(
        &f,
        &other,
        ApprovalAnswer::Deny {
            reason: "no".into(),
        },
    )
    .await;
    assert!(!denied.is_ok());
    assert_eq!(person.asked.lock().unwrap().len(), 1);
    // Breakers and high-risk actions are not offered "always" at all.
    for call in [
        request("fs_delete", json!({"path": "/workspace"})),
        request("ship_deploy", json!({"env": "production"})),
    ] {
        let probe = answered(
            &f,
            &call,
            ApprovalAnswer::Deny {
                reason: "look".into(),
            },
        )
        .await
        .1;
        assert!(!probe.asked.lock().unwrap()[0].always_offered, "{call:?}");
    }
}
