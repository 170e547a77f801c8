//! The `[sandbox]` section of `warden.toml` (the Kubernetes table is in
//! [`crate::kubernetes`]). Every default is safe: no
//! network, read-only workspace, small limits, metadata-only logs.

use serde::{Deserialize, Serialize};

use crate::SandboxError;
use crate::kubernetes::{BackendKind, KubernetesSettings};

/// When containers are created and removed.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// One warm container per agent (and image), reused by its calls and
    /// removed after `grace-period-secs` without calls.
    #[default]
    PerAgent,
    /// One container per task id, removed when the task ends (or after the
    /// grace period without calls).
    PerTask,
    /// A fresh container for every call, removed when the call returns.
    PerCall,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::PerAgent => "per-agent",
            Strategy::PerTask => "per-task",
            Strategy::PerCall => "per-call",
        }
    }
}

/// Sandboxes (Docker containers or Kubernetes pods) for the terminal,
/// code, browser, desktop and git tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct SandboxConfig {
    /// Where the sandboxes run: `docker` (default, the local engine) or
    /// `kubernetes` (pods on a cluster, `[sandbox.kubernetes]`).
    pub backend: BackendKind,
    /// The Kubernetes backend's namespace, connection and quotas (read
    /// only with `backend = "kubernetes"`).
    pub kubernetes: KubernetesSettings,
    /// Lifecycle strategy: `per-agent` (default), `per-task` or `per-call`.
    /// A call whose owner (agent, or task for per-task) is unknown runs
    /// per-call.
    pub strategy: Strategy,
    /// Seconds an idle per-agent (or per-task) container stays warm.
    pub grace_period_secs: u64,
    /// Memory limit of each container, in MiB (swap included: no swap).
    pub memory_mb: u64,
    /// CPU limit of each container, in thousandths of a CPU.
    pub cpu_millis: u64,
    /// Processes and threads each container may hold.
    pub pids_limit: u32,
    /// Size of the tmpfs at /tmp (the only writable place besides a
    /// read-write workspace), in MiB.
    pub tmpfs_mb: u64,
    /// Images are `<image-prefix>-<base|browser|desktop|git>:<recipe digest>`.
    pub image_prefix: String,
    /// Deadline of a call that names none, in seconds.
    pub default_timeout_secs: u64,
    /// Largest deadline a call may ask for, in seconds.
    pub max_timeout_secs: u64,
    /// Output kept per stream (stdout, stderr) and returned to the agent,
    /// in bytes; the rest is counted and dropped.
    pub max_output_bytes: u64,
    /// Directories mounted into the containers, as
    /// `HOST_DIR[:GUEST_DIR][:ro|rw]` (read-only by default). The first is
    /// the workspace: the working directory and where screenshots go.
    pub grant_fs: Vec<String>,
    /// Egress allowlist: `IP:PORT`, `IP`, `CIDR[:PORT]` or `name:PORT`
    /// (resolved once when the container is created and pinned in its
    /// /etc/hosts). Empty: no network at all. TCP only.
    pub grant_net: Vec<String>,
    /// Container log shipping.
    pub logs: LogShipping,
    /// The git tools' remotes: which internal hosts they may reach, and
    /// the limits of clone, fetch and push.
    pub git: GitSettings,
    /// Which Warden installation owns the containers (set by the host from
    /// its state directory, not configured): reconciliation removes only
    /// this instance's orphans.
    #[serde(skip)]
    #[schemars(skip)]
    pub instance: String,
    /// Which deployment an agent's persistent workspaces belong to (set
    /// by the host, not configured): every replica of one deployment
    /// (one `[state] shared-key`) names the same, so an agent finds its
    /// files whichever replica serves it; a host alone names its own.
    #[serde(skip)]
    #[schemars(skip)]
    pub deployment: String,
}

/// The instance of a host that names none.
pub const DEFAULT_INSTANCE: &str = "default";

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            instance: DEFAULT_INSTANCE.to_owned(),
            deployment: DEFAULT_INSTANCE.to_owned(),
            backend: BackendKind::Docker,
            kubernetes: KubernetesSettings::default(),
            strategy: Strategy::PerAgent,
            grace_period_secs: 30,
            memory_mb: 512,
            cpu_millis: 1000,
            pids_limit: 128,
            tmpfs_mb: 64,
            image_prefix: "warden-sandbox".into(),
            default_timeout_secs: 60,
            max_timeout_secs: 600,
            max_output_bytes: 1 << 20,
            grant_fs: Vec::new(),
            grant_net: Vec::new(),
            logs: LogShipping::default(),
            git: GitSettings::default(),
        }
    }
}

impl SandboxConfig {
    /// Checks what deserializing cannot: a Kubernetes table that a
    /// cluster would reject, named by its key path.
    pub fn validate(&self) -> Result<(), SandboxError> {
        if self.backend == BackendKind::Kubernetes {
            self.kubernetes
                .validate()
                .map_err(|e| SandboxError::Config {
                    key: format!("sandbox.kubernetes.{}", e.key),
                    reason: e.reason,
                })?;
        }
        Ok(())
    }
}

/// What the host logs about each sandboxed command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct LogShipping {
    /// Log metadata (sizes, line counts, timings, exit code) of every
    /// command. On by default.
    pub enabled: bool,
    /// Also log the raw stdout/stderr. Off by default: output can carry
    /// secrets that key-name redaction never sees.
    pub raw: bool,
    /// Raw bytes logged per stream when `raw` is on.
    pub max_raw_bytes: u64,
}

impl Default for LogShipping {
    fn default() -> Self {
        LogShipping {
            enabled: true,
            raw: false,
            max_raw_bytes: 16 << 10,
        }
    }
}

/// `[sandbox.git]`: remotes and limits of `git_clone`, `git_fetch` and
/// `git_push`. Defaults deny: no internal host, https and ssh only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct GitSettings {
    /// Host names (exact, no wildcards) allowed to resolve to loopback,
    /// private, link-local, CGNAT or unique-local addresses: named
    /// internal git servers. Metadata addresses stay refused.
    pub allow_hosts: Vec<String>,
    /// Accept plain `http://` remotes (no transport security).
    pub insecure_http: bool,
    /// Deadline of a clone, fetch or push that names none, in seconds
    /// (capped by `max-timeout-secs`).
    pub deadline_secs: u64,
    /// How much a clone may write, in MiB: it lands in a tmpfs of this
    /// size first (counted as the container's memory) and is copied into
    /// the workspace only when complete.
    pub quota_mb: u64,
    /// The known_hosts file ssh remotes' host keys are checked against
    /// (mounted read-only into clone, fetch and push containers). Unset:
    /// ssh remotes are refused.
    pub known_hosts: Option<std::path::PathBuf>,
}

impl Default for GitSettings {
    fn default() -> Self {
        GitSettings {
            allow_hosts: Vec::new(),
            insecure_http: false,
            deadline_secs: 300,
            quota_mb: 512,
            known_hosts: None,
        }
    }
}
