//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use warden_api::{
    BackendCall, CallContext, CallLimits, Envelope, FsAccess, FsGrant, Grants, ToolName,
};
use warden_runtime::{CacheKey, Plugin, Runtime, RuntimeConfig};

/// A compile cache shared by every test process, so each component is
/// compiled once per test run.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("warden-it-cache")
}

/// The key of that cache (a host derives its own from its host key).
pub fn cache_key() -> CacheKey {
    CacheKey::new([7; 32])
}

pub fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig::new(Some(cache_dir())).with_cache_key(cache_key()))
        .expect("runtime")
}

pub async fn load(runtime: &Runtime, path: &str) -> Plugin {
    runtime.load(Path::new(path)).await.expect("plugin loads")
}

pub async fn probe() -> Plugin {
    load(&runtime(), warden_test_artifacts::PROBE).await
}

pub async fn fs_plugin() -> Plugin {
    load(&runtime(), warden_test_artifacts::FS).await
}

pub fn context() -> CallContext {
    CallContext {
        principal: None,
        agent: "test-agent".into(),
        session: "s1".into(),
        task: None,
        request_id: "r1".into(),
    }
}

pub fn limits() -> CallLimits {
    CallLimits {
        deadline: Duration::from_secs(10),
        memory_bytes: 64 << 20,
        output_bytes: 1 << 20,
        log_bytes: 4096,
        fuel: None,
    }
}

/// Calls `tool` on `plugin` directly (no gate): the runtime's own path.
pub async fn call(
    plugin: &Plugin,
    tool: &str,
    args: Value,
    grants: &Grants,
    limits: CallLimits,
) -> Envelope {
    let name: ToolName = tool.parse().expect("tool name");
    let spec = plugin
        .manifest()
        .tools
        .iter()
        .find(|t| t.name == name)
        .expect("tool exists")
        .clone();
    let ctx = context();
    plugin
        .invoke(BackendCall {
            tool: &spec,
            args: &args,
            context: &ctx,
            grants,
            limits,
            events: None,
            paths: None,
            cwd: None,
            remote: None,
        })
        .await
}

/// The policy environment of every test agent: workspace and project at
/// `/workspace`, home at `/home/agent`.
pub fn workspace_env() -> warden_gate::PolicyEnv {
    warden_gate::PolicyEnv {
        workspace: "/workspace".into(),
        project: "/workspace".into(),
        home: "/home/agent".into(),
    }
}

pub fn grant(dir: &Path, access: FsAccess) -> Grants {
    Grants {
        fs: vec![FsGrant {
            host_path: dir.to_path_buf(),
            guest_path: "/workspace".into(),
            access,
        }],
        ..Default::default()
    }
}

/// `data` of an ok envelope; panics with the envelope otherwise.
pub fn data(envelope: &Envelope) -> &Value {
    match envelope {
        Envelope::Ok { data } => data,
        other => panic!("expected ok, got {other:?}"),
    }
}

/// `(error_type, domain_code, message)` of an error envelope.
pub fn error(envelope: &Envelope) -> (String, String, String) {
    match envelope {
        Envelope::Error {
            error_type,
            message,
            domain_code,
        } => (error_type.to_string(), domain_code.clone(), message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

pub fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Plugin>();
    is::<Arc<Runtime>>();
}

/// A clock tests move by hand, so time-boxed behaviour is asserted
/// without waiting for it.
#[derive(Debug, Default)]
pub struct ManualClock(std::sync::atomic::AtomicU64);

impl ManualClock {
    pub fn at(ms: u64) -> Arc<ManualClock> {
        Arc::new(ManualClock(std::sync::atomic::AtomicU64::new(ms)))
    }

    pub fn set(&self, ms: u64) {
        self.0.store(ms, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl warden_api::Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
