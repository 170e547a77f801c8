//! The Docker sandboxes against the real engine: security limits, the
//! egress allowlist, lifecycle strategies, the browser and the desktop.
//! These tests need Docker and the sandbox images (`cargo xtask test`
//! provides both); without them they fail with a message saying so.

mod browser;
mod corpus;
mod desktop;
mod differential;
mod effects;
mod git;
mod images;
mod lifecycle;
mod masks;
mod security;

use std::sync::Arc;

use serde_json::{Value, json};
use warden_api::{CallContext, CallRequest, Envelope, FsAccess, FsGrant, Grants, ToolHost};
use warden_gate::Gate;
use warden_policy::Policy;
use warden_policy::config::PolicyConfig;
use warden_sandbox::spec::AGENT_LABEL;
use warden_sandbox::{SandboxConfig, SandboxTools, SharedSandbox};

/// One test's sandbox, gate and workspace.
pub struct Rig {
    pub tools: Arc<SandboxTools>,
    pub sandbox: SharedSandbox,
    pub gate: Gate,
    pub agent: String,
    pub dir: tempfile::TempDir,
}

/// A unique agent id per test and process, so tests running side by side
/// count only their own containers.
pub fn agent(name: &str) -> String {
    format!("sbx-{name}-{}", std::process::id())
}

/// A workspace directory the sandbox user (uid 1000) can write.
pub fn workspace() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

pub fn ws_grant(dir: &std::path::Path, access: FsAccess) -> FsGrant {
    FsGrant {
        host_path: dir.to_path_buf(),
        guest_path: "/workspace".into(),
        access,
    }
}

/// A call's guard with nothing denied or protected: only who allowed it.
#[derive(Debug)]
struct AllowedBy(warden_api::Effects);

impl warden_api::PathGuard for AllowedBy {
    fn denied(&self, _path: &str) -> Option<String> {
        None
    }
    fn protected(&self, _path: &str) -> Option<String> {
        None
    }
    fn effects(&self) -> warden_api::Effects {
        self.0
    }
}

/// A sandbox rig whose agent is elevated and autonomous, plus `extra`
/// policy TOML (rules for that agent).
pub async fn rig_with(
    name: &str,
    config: SandboxConfig,
    access: FsAccess,
    net: &[String],
    extra: &str,
) -> Rig {
    let tools = SandboxTools::new(config).unwrap();
    rig_of(name, tools, access, net, "autonomous", extra).await
}

/// A read-write rig whose elevated agent is in `mode`, plus `extra`
/// policy TOML.
pub async fn rig_in_mode(name: &str, mode: &str, net: &[String], extra: &str) -> Rig {
    let tools = SandboxTools::new(SandboxConfig::default()).unwrap();
    rig_of(name, tools, FsAccess::ReadWrite, net, mode, extra).await
}

/// A read-write rig whose sandbox judges grace periods by `clock`.
pub async fn rig_clocked(
    name: &str,
    config: SandboxConfig,
    clock: Arc<dyn warden_api::Clock>,
) -> Rig {
    let tools = SandboxTools::new(config).unwrap().with_clock(clock);
    rig_of(name, tools, FsAccess::ReadWrite, &[], "autonomous", "").await
}

async fn rig_of(
    name: &str,
    tools: SandboxTools,
    access: FsAccess,
    net: &[String],
    mode: &str,
    extra: &str,
) -> Rig {
    let agent = agent(name);
    let dir = workspace();
    let grants = Grants {
        fs: vec![ws_grant(dir.path(), access)],
        net: net.iter().map(|n| n.parse().unwrap()).collect(),
        ..Grants::default()
    };
    let tools = Arc::new(tools);
    let sandbox = tools.start().await.unwrap_or_else(|e| {
        panic!("these tests need a Docker engine (run scripts/ensure-docker, then `warden sandbox build-images`): {e}")
    });
    let text = format!("[agents.{agent}]\nlevel = \"elevated\"\nmode = \"{mode}\"\n{extra}");
    let config: PolicyConfig = toml::from_str(&text).unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let mut b = Gate::builder()
        .env(crate::common::workspace_env())
        .limits(warden_api::CallLimits {
            deadline: std::time::Duration::from_secs(120),
            ..warden_api::CallLimits::DEFAULT
        })
        .backend("sandbox", tools.clone(), grants)
        .unwrap();
    for a in policy.agents() {
        b = b.agent(a.clone());
    }
    Rig {
        tools,
        sandbox,
        gate: b.build(),
        agent,
        dir,
    }
}

pub async fn rig(name: &str, config: SandboxConfig) -> Rig {
    rig_with(name, config, FsAccess::ReadWrite, &[], "").await
}

impl Rig {
    pub fn request(&self, tool: &str, args: Value) -> CallRequest {
        CallRequest {
            tool: tool.into(),
            args,
            context: CallContext {
                principal: None,
                agent: self.agent.clone(),
                session: "s1".into(),
                task: None,
                request_id: "r1".into(),
            },
        }
    }

    pub async fn call(&self, tool: &str, args: Value) -> Envelope {
        let envelope = self.gate.call(self.request(tool, args)).await;
        self.conforms(tool, &envelope);
        envelope
    }

    /// A success's data is valid against the tool's declared result
    /// schema, which MCP clients hold it to (see `conformance.rs`).
    fn conforms(&self, tool: &str, envelope: &Envelope) {
        use warden_api::Backend as _;
        let Envelope::Ok { data } = envelope else {
            return;
        };
        let specs = self.tools.tools();
        let Some(spec) = specs.iter().find(|s| s.name.as_str() == tool) else {
            return;
        };
        let problems = crate::conformance::schema_problems(&spec.result_schema, data);
        assert!(
            problems.is_empty(),
            "{tool}'s result does not match its result schema: {problems:?}\n{data}"
        );
    }

    /// [`Rig::call`] with a person who allows an ask once (a circuit
    /// breaker always asks, whatever the mode).
    pub async fn call_approved(&self, tool: &str, args: Value) -> Envelope {
        struct AllowOnce;
        impl warden_api::Approver for AllowOnce {
            fn ask(
                &self,
                _request: warden_api::ApprovalRequest,
            ) -> warden_api::BoxFuture<'_, warden_api::ApprovalAnswer> {
                Box::pin(std::future::ready(warden_api::ApprovalAnswer::AllowOnce))
            }
        }
        let hooks = warden_api::CallHooks {
            approver: Some(Arc::new(AllowOnce)),
            ..warden_api::CallHooks::default()
        };
        let envelope = self.gate.call_with(self.request(tool, args), hooks).await;
        self.conforms(tool, &envelope);
        envelope
    }

    /// `terminal_exec` of `command` through the gate, as decided.
    pub async fn terminal(&self, command: &str) -> Envelope {
        self.call(
            "terminal_exec",
            json!({"command": command, "timeout_secs": 60}),
        )
        .await
    }

    /// `terminal_exec` of `command` straight on the sandbox backend,
    /// allowed by `effects`, with `grants` (nothing denied or protected):
    /// the decision is taken as given, so what is checked is where and
    /// how the call runs. Its data.
    pub async fn direct(
        &self,
        grants: &Grants,
        effects: warden_api::Effects,
        command: &str,
    ) -> Value {
        use warden_api::Backend as _;
        let specs = self.tools.tools();
        let spec = specs
            .iter()
            .find(|s| s.name.as_str() == "terminal_exec")
            .unwrap();
        let args = json!({"command": command, "timeout_secs": 1800});
        let context = self.request("terminal_exec", Value::Null).context;
        let guard: Arc<dyn warden_api::PathGuard> = Arc::new(AllowedBy(effects));
        let envelope = self
            .tools
            .invoke(warden_api::BackendCall {
                tool: spec,
                args: &args,
                context: &context,
                grants,
                limits: warden_api::CallLimits {
                    deadline: std::time::Duration::from_secs(1800),
                    ..warden_api::CallLimits::DEFAULT
                },
                events: None,
                paths: Some(&guard),
                cwd: None,
                remote: None,
            })
            .await;
        crate::common::data(&envelope).clone()
    }

    /// `terminal_exec` that must succeed; its data.
    pub async fn sh(&self, command: &str) -> Value {
        crate::common::data(&self.terminal(command).await).clone()
    }

    /// Managed containers of this rig's agent.
    pub async fn containers(&self) -> Vec<String> {
        self.sandbox
            .0
            .docker()
            .list_managed(&[(AGENT_LABEL, self.agent.as_str())])
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect()
    }

    /// This agent's containers once finished calls' containers are
    /// removed, besides the standbys kept ready for network operations
    /// (in which nothing has run).
    pub async fn containers_in_use(&self) -> Vec<String> {
        self.sandbox.0.settle().await;
        let standby = self.sandbox.0.standby_ids().await;
        let mut left = self.containers().await;
        left.retain(|id| !standby.contains(id));
        left
    }

    /// Shuts the sandbox down; nothing of this agent may remain.
    pub async fn done(self) {
        self.tools.shutdown().await;
        assert!(self.containers().await.is_empty());
    }
}

pub fn stdout(data: &Value) -> String {
    data["stdout"].as_str().unwrap_or_default().to_owned()
}
