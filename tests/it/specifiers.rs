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
    let policy = agents("[agents.a]\nlevel = \"standard\"\nrules = { allow = [\"http_fetch\"] }\n");
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
            .call(request("a", "http_fetch", json!({"url": url})))
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
                "name": "sh_exec",
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

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Wasm
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
        request("a", "sh_exec", args)
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

/// A file tool granted another directory before the workspace: the
/// decision resolved `secret.txt` as `/workspace/secret.txt`, so the tool
/// must open that file, not `/data/secret.txt` (which a rule denies).
/// With only `/data` granted, the decision resolves relative paths there,
/// so the deny rule sees the file the tool would open.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_tool_opens_the_relative_path_the_decision_judged() {
    use warden_api::{FsAccess, FsGrant};
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    for (d, text) in [(&data, "data secret"), (&ws, "workspace notes")] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("secret.txt"), text).unwrap();
    }
    let fs_grant = |host: &std::path::Path, guest: &str| FsGrant {
        host_path: host.to_path_buf(),
        guest_path: guest.into(),
        access: FsAccess::Read,
    };
    let policy = agents(
        "[rules]\ndeny = [\"fs_read(//data/**)\"]\n[agents.a]\nlevel = \"elevated\"\nmode = \"autonomous\"\n",
    );
    let runtime = common::runtime();
    for (grants, expect) in [
        (
            vec![fs_grant(&data, "/data"), fs_grant(&ws, "/workspace")],
            Ok("workspace notes"),
        ),
        (vec![fs_grant(&data, "/data")], Err("denied_by_rule")),
    ] {
        let plugin = common::load(&runtime, warden_test_artifacts::FS).await;
        let grants = Grants {
            fs: grants,
            ..Grants::default()
        };
        let mut builder = Gate::builder()
            .env(env())
            .backend("fs", Arc::new(plugin), grants)
            .unwrap();
        for a in policy.agents() {
            builder = builder.agent(a.clone());
        }
        let gate = builder.build();
        let e = gate
            .call(request("a", "fs_read", json!({"path": "secret.txt"})))
            .await;
        match expect {
            Ok(text) => {
                let got = serde_json::to_string(&e).unwrap();
                assert!(got.contains(text), "{got}");
                assert!(!got.contains("data secret"), "{got}");
            }
            Err(code) => {
                let (_, got, msg) = common::error(&e);
                assert_eq!(got, code, "{msg}");
            }
        }
    }
}
