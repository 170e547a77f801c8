//! What an MCP client holds Warden's results to, for every bundled tool:
//! a success's `structuredContent` is valid against the tool's
//! `outputSchema` as `tools/list` gives it (the check both official SDKs
//! run), and every kind of error result — a tool error, invalid
//! arguments, a denial — carries its envelope as JSON text and no
//! structured content, so no client turns a refusal into an exception.
//!
//! The sandboxed tools get the same success check on every call their
//! tests make (`sandbox::Rig::call`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use warden_api::Grants;
use warden_gate::{ApprovalBook, Gate};
use warden_mcp::{Server, ServerOptions};
use warden_policy::{Policy, config::PolicyConfig};
use warden_test_artifacts::error_envelope;

use crate::common;
use crate::server::Server as HttpServer;
use crate::wire::Wire;

/// Arguments for a call that succeeds and one that fails in the tool.
struct Sample {
    ok: Value,
    fails: Value,
}

fn samples(http: &HttpServer) -> BTreeMap<&'static str, Sample> {
    let mut s = BTreeMap::new();
    let mut add = |name, ok, fails| {
        s.insert(name, Sample { ok, fails });
    };
    add(
        "fs_read",
        json!({"path": "hello.txt"}),
        json!({"path": "missing.txt"}),
    );
    add(
        "fs_write",
        json!({"path": "new.txt", "content": "x"}),
        json!({"path": "sub", "content": "x"}),
    );
    add(
        "fs_edit",
        json!({"path": "hello.txt", "old": "hello", "new": "hi"}),
        json!({"path": "hello.txt", "old": "not in the file", "new": "x"}),
    );
    add(
        "fs_list",
        json!({"path": ".", "recursive": true}),
        json!({"path": "missing"}),
    );
    add(
        "fs_delete",
        json!({"path": "doomed.txt"}),
        json!({"path": "missing.txt"}),
    );
    add(
        "http_fetch",
        json!({"url": http.url("/hello")}),
        json!({"url": "http://127.0.0.1:1/"}),
    );
    add(
        "search_grep",
        json!({"pattern": "hel+o"}),
        json!({"pattern": "(unclosed"}),
    );
    add(
        "search_glob",
        json!({"pattern": "**/*.txt"}),
        json!({"pattern": "*.txt", "path": "missing"}),
    );
    add(
        "json_query",
        json!({"filter": ".items[] | .name", "input": {"items": [{"name": "a"}]}}),
        json!({"filter": ".[", "input": {}}),
    );
    s
}

async fn server(http: &HttpServer, ws: &std::path::Path) -> Server {
    let grants = Grants {
        net: vec![format!("127.0.0.1:{}", http.port()).parse().unwrap()],
        ..common::grant(ws, warden_api::FsAccess::ReadWrite)
    };
    let config: PolicyConfig = toml::from_str(
        r#"
        [agents.worker]
        level = "elevated"
        mode = "autonomous"
        [agents.nobody]
        level = "standard"
        rules = { deny = ["*"] }
        "#,
    )
    .unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let runtime = common::runtime();
    let mut builder = Gate::builder()
        .env(crate::common::workspace_env())
        .limits(common::limits());
    for (name, path) in [
        ("fs", warden_test_artifacts::FS),
        ("http", warden_test_artifacts::HTTP),
        ("search", warden_test_artifacts::SEARCH),
        ("json", warden_test_artifacts::JSON),
    ] {
        let plugin = Arc::new(common::load(&runtime, path).await);
        builder = builder.backend(name, plugin, grants.clone()).unwrap();
    }
    for agent in policy.agents() {
        builder = builder.agent(agent.clone());
    }
    Server::new(
        Arc::new(builder.build()),
        Arc::new(ApprovalBook::new(Duration::from_secs(60))),
        ServerOptions {
            name: "warden".into(),
            version: "test".into(),
            disclosure: Default::default(),
            elicitation: false,
            approvals: Default::default(),
            request_state_key: b"a-conformance-test-request-state-key-0123".to_vec(),
        },
    )
    .unwrap()
}

/// What model APIs accept as a function name: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn model_api_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Problems of `value` against `schema`, as a client's validator sees them.
pub fn schema_problems(schema: &Value, value: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema)
        .unwrap_or_else(|e| panic!("the output schema compiles: {e}: {schema}"));
    validator
        .iter_errors(value)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bundled_tool_returns_results_clients_accept() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hello\n").unwrap();
    std::fs::write(ws.path().join("doomed.txt"), "bye\n").unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let http = HttpServer::start();
    let server = server(&http, ws.path()).await;
    let samples = samples(&http);

    let mut worker = Wire::start(&server, "worker");
    worker.initialize(json!({})).await;
    let (list, _) = worker.request(1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let listed: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in &listed {
        assert!(
            model_api_name(name),
            "`{name}` is not a name model APIs accept (^[a-zA-Z0-9_-]{{1,64}}$)"
        );
    }
    let sampled: Vec<&str> = samples.keys().copied().collect();
    assert_eq!(
        {
            let mut l = listed.clone();
            l.sort_unstable();
            l
        },
        sampled,
        "every bundled tool has a sample here (add one for a new tool)"
    );

    let mut nobody = Wire::start(&server, "nobody");
    nobody.initialize(json!({})).await;
    let mut id = 10;
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let sample = &samples[name];
        let mut call = async |wire: &mut Wire, args: &Value| {
            id += 1;
            let (response, _) = wire
                .request(id, "tools/call", json!({"name": name, "arguments": args}))
                .await;
            response["result"].clone()
        };

        let ok = call(&mut worker, &sample.ok).await;
        assert_eq!(ok["isError"], false, "{name} succeeds: {ok}");
        match tool.get("outputSchema") {
            Some(schema) => {
                let data = ok
                    .get("structuredContent")
                    .unwrap_or_else(|| panic!("{name} declares an output schema: {ok}"));
                let problems = schema_problems(schema, data);
                assert!(
                    problems.is_empty(),
                    "{name}'s result does not match its output schema: {problems:?}\n{data}"
                );
            }
            None => assert!(ok.get("structuredContent").is_none(), "{name}: {ok}"),
        }

        for (what, denied, args) in [
            ("a tool error", false, &sample.fails),
            ("invalid arguments", false, &json!({"no such": 1})),
            ("a denial", true, &sample.ok),
        ] {
            let wire = if denied { &mut nobody } else { &mut worker };
            let result = call(wire, args).await;
            let envelope = error_envelope(&result);
            assert_eq!(envelope["status"], "error", "{name}, {what}: {result}");
            assert!(
                envelope["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}, {what}: the reason is readable: {result}"
            );
        }
    }
}

/// The sandboxed tools are published under names model APIs accept too
/// (their specs are built without an engine).
#[test]
fn every_sandboxed_tool_has_a_model_api_name() {
    use warden_api::Backend as _;
    let tools = warden_sandbox::SandboxTools::new(warden_sandbox::SandboxConfig::default())
        .unwrap()
        .tools();
    assert!(!tools.is_empty());
    for spec in tools {
        assert!(model_api_name(spec.name.as_str()), "{}", spec.name);
    }
}
