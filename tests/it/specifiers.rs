//! The decision sees the whole call: a web tool's loopback or private
//! target is refused before anything connects (unless a grant names the
//! address), and a shell tool's relative paths resolve against its `cwd`.

use std::sync::{Arc, Mutex};

use serde_json::json;
use warden_api::{
    Backend, BackendCall, BoxFuture, CallRequest, Envelope, Grants, ToolHost, ToolSpec,
};
use warden_gate::{Gate, PolicyEnv};
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;

use crate::common;
use crate::server::Server;

fn env() -> PolicyEnv {
    PolicyEnv {
        workspace: "/workspace".into(),
        project: "/workspace".into(),
        home: "/home/agent".into(),
    }
}

fn agents(toml: &str) -> Policy {
    let config: PolicyConfig = toml::from_str(toml).unwrap();
    Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap()
}

fn request(agent: &str, tool: &str, args: serde_json::Value) -> CallRequest {
    let mut context = common::context();
    context.agent = agent.into();
    CallRequest {
        tool: tool.into(),
        args,
        context,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_private_target_is_refused_before_anything_connects() {
    let server = Server::start();
    let plugin = common::load(&common::runtime(), warden_test_artifacts::HTTP).await;
    // The plugin may reach example.com; the agent's rules allow every fetch.
    let grants = Grants {
        net: vec!["example.com".parse().unwrap()],
        ..Grants::default()
    };
    let policy = agents("[agents.a]\nlevel = \"standard\"\nrules = { allow = [\"http.fetch\"] }\n");
    let mut builder = Gate::builder()
        .env(env())
        .backend("http", Arc::new(plugin), grants)
        .unwrap();
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    let gate = builder.build();
    let port = server.port();
    for url in [
        format!("http://127.0.0.1:{port}/hello"),
        format!("http://2130706433:{port}/hello"),
        format!("http://[::ffff:127.0.0.1]:{port}/hello"),
        format!("http://localhost:{port}/hello"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        let e = gate
            .call(request("a", "http.fetch", json!({"url": url})))
            .await;
        let (ty, code, msg) = common::error(&e);
        assert_eq!(
            (ty.as_str(), code.as_str()),
            ("PermissionDenied", "denied_by_constraint"),
            "{url}: {msg}"
        );
        assert!(msg.contains("public internet"), "{msg}");
    }
    assert_eq!(server.hits(), 0, "nothing connected");
}

/// A shell tool that records the calls that reach it.
#[derive(Default)]
struct Shell(Mutex<Vec<serde_json::Value>>);

impl Backend for Shell {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            serde_json::from_value(json!({
                "name": "sh.exec",
                "summary": "Runs a command.",
                "description": "Runs a command line in `cwd`.",
                "category": "terminal",
                "action-type": "test:run",
                "params-schema": {"type": "object", "properties": {
                    "command": {"type": "string"}, "cwd": {"type": "string"}}},
                "result-schema": {"type": "object"},
                "side-effect": true,
                "specifier-template": "{command}",
            }))
            .unwrap(),
        ]
    }

    fn isolated(&self) -> bool {
        true
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        self.0.lock().unwrap().push(call.args.clone());
        Box::pin(std::future::ready(Envelope::ok(json!({}))))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn relative_paths_of_a_command_resolve_against_its_cwd() {
    let shell = Arc::new(Shell::default());
    // Plan mode: only read-only commands inside the workspace run.
    let policy = agents("[agents.a]\nlevel = \"elevated\"\nmode = \"plan\"\n");
    let mut builder = Gate::builder()
        .env(env())
        .backend("sh", shell.clone(), Grants::default())
        .unwrap();
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    let gate = builder.build();
    let read = |cwd: Option<&str>| {
        let mut args = json!({"command": "cat passwd"});
        if let Some(cwd) = cwd {
            args["cwd"] = json!(cwd);
        }
        request("a", "sh.exec", args)
    };
    assert!(gate.call(read(None)).await.is_ok(), "inside the workspace");
    assert!(gate.call(read(Some("/workspace/docs"))).await.is_ok());
    let e = gate.call(read(Some("/etc"))).await;
    let (_, code, msg) = common::error(&e);
    assert_eq!(code, "denied_by_mode", "{msg}");
    assert!(msg.contains("/etc") || msg.contains("plan"), "{msg}");
    let e = gate.call(read(Some("../../etc"))).await;
    assert!(
        !e.is_ok(),
        "a relative cwd climbing out is outside too: {e:?}"
    );
    assert_eq!(shell.0.lock().unwrap().len(), 2);
}
