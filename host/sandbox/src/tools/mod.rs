//! The host-native sandboxed tools as one [`Backend`]: `terminal_exec`,
//! `code_run`, `browser_*` and `desktop_*`. The gate decides every call
//! before it gets here; a call this backend receives was allowed.
//!
//! The configured backend (Docker or Kubernetes) is connected on first use
//! (or by [`SandboxTools::connect`]); while it does not answer, these
//! tools fail with a clear error and every other backend keeps working.

mod browser;
mod desktop;
mod git;
pub(crate) mod shell;
mod specs;

use std::time::Duration;

use serde_json::Value;
use warden_api::{Backend, BackendCall, BoxFuture, Envelope, ErrorType, FsAccess, ToolSpec};

use crate::docker::ExecOutput;
use crate::images::ImageKind;
use crate::kubernetes::{BackendKind, KubeSandbox};
use crate::sandbox::{RunOutput, RunRequest, Sandbox};
use crate::{DockerSandbox, SandboxConfig, SandboxError, SharedSandbox};

/// The backend running the sandboxes, once connected.
#[derive(Debug, Clone)]
enum Running {
    Docker(SharedSandbox),
    Kubernetes(std::sync::Arc<KubeSandbox>),
}

impl Running {
    fn sandbox(&self) -> std::sync::Arc<dyn Sandbox> {
        match self {
            Running::Docker(s) => std::sync::Arc::new(s.clone()),
            Running::Kubernetes(k) => k.clone(),
        }
    }
}

/// The sandboxed tools.
pub struct SandboxTools {
    config: SandboxConfig,
    specs: Vec<ToolSpec>,
    sandbox: tokio::sync::Mutex<Option<Running>>,
    clock: std::sync::Arc<dyn warden_api::Clock>,
    /// Resolves git remotes' hosts before they are vetted and pinned.
    git_dns: std::sync::Arc<dyn warden_vcs::Resolve>,
    /// `[sandbox.git]`'s remote rules, checked once at construction.
    git_policy: warden_vcs::GitNetPolicy,
}

impl std::fmt::Debug for SandboxTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxTools")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What a call of sandboxed git tool `tool` with `args` does to a
/// repository, as [`Backend::vcs_operation`] declares it with `git` as
/// `[sandbox.git]` (for callers that judge a described call without a
/// running sandbox, such as `warden policy check`). `None` for any other
/// tool.
pub fn git_operation(
    tool: &str,
    args: &Value,
    git: &crate::GitSettings,
) -> Option<warden_api::VcsOperation> {
    // A bad allowlist is refused when the sandbox starts; judged here
    // as if it allowlisted nothing.
    let policy = git::net_policy(git).unwrap_or_else(|_| warden_vcs::GitNetPolicy::new());
    git::operation(tool, args, &policy, None).map(|f| f.operation)
}

/// Where a command runs: the image, the grants the container is made
/// from, whether it gets a container of its own, and its deadline.
pub(crate) struct Place<'a> {
    pub kind: ImageKind,
    pub grants: &'a warden_api::Grants,
    pub own_container: bool,
    /// With `own_container`: its /tmp size in MiB (a disk quota).
    pub scratch_mb: Option<u64>,
    pub timeout: Duration,
    /// In the owner's reader: every granted directory read-only, no
    /// network (a call allowed only because it reads).
    pub read_only: bool,
}

/// Why a call failed, before it becomes an envelope.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: ErrorType,
    code: &'static str,
    message: String,
}

impl Failure {
    pub(crate) fn new(kind: ErrorType, code: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn args(message: impl Into<String>) -> Failure {
        Failure::new(
            ErrorType::ArgumentValidationError,
            "invalid_argument",
            message,
        )
    }
}

impl From<SandboxError> for Failure {
    fn from(e: SandboxError) -> Failure {
        let (kind, code) = match &e {
            SandboxError::DockerUnavailable { .. } => (ErrorType::HostError, "docker_unavailable"),
            SandboxError::KubernetesUnavailable { .. } => {
                (ErrorType::HostError, "kubernetes_unavailable")
            }
            SandboxError::QuotaExceeded { .. } => (ErrorType::LimitExceeded, "quota_exceeded"),
            SandboxError::PodStart { .. } => (ErrorType::HostError, "pod_start_failed"),
            SandboxError::Config { .. } => (ErrorType::HostError, "sandbox_config"),
            SandboxError::ImageMissing { .. } => (ErrorType::HostError, "image_missing"),
            SandboxError::Grant { .. } => (ErrorType::PermissionDenied, "grant_not_enforceable"),
            SandboxError::Image { .. } => (ErrorType::ToolError, "bad_image"),
            _ => (ErrorType::HostError, "sandbox_error"),
        };
        Failure::new(kind, code, e.to_string())
    }
}

type Outcome = Result<Value, Failure>;

impl SandboxTools {
    pub fn new(config: SandboxConfig) -> Result<SandboxTools, SandboxError> {
        config.validate()?;
        let specs = specs::all().map_err(|e| SandboxError::ToolSpec {
            reason: e.to_string(),
        })?;
        let git_policy = git::net_policy(&config.git)?;
        Ok(SandboxTools {
            config,
            specs,
            sandbox: tokio::sync::Mutex::new(None),
            clock: std::sync::Arc::new(warden_api::SystemClock),
            git_dns: std::sync::Arc::new(git::SystemDns),
            git_policy,
        })
    }

    /// Idle containers' grace periods are judged by `clock` (the host's).
    /// Default: the system clock.
    pub fn with_clock(mut self, clock: std::sync::Arc<dyn warden_api::Clock>) -> SandboxTools {
        self.clock = clock;
        self
    }

    /// Git remotes' hosts are resolved by `dns` (their answers vetted and
    /// pinned). Default: the host's resolver.
    pub fn with_git_resolver(
        mut self,
        dns: std::sync::Arc<dyn warden_vcs::Resolve>,
    ) -> SandboxTools {
        self.git_dns = dns;
        self
    }

    /// Connects to the configured backend (Docker or Kubernetes) and
    /// reconciles orphans, unless already done.
    async fn running(&self) -> Result<Running, SandboxError> {
        let mut guard = self.sandbox.lock().await;
        if let Some(s) = guard.as_ref() {
            return Ok(s.clone());
        }
        let running = match self.config.backend {
            BackendKind::Docker => Running::Docker(SharedSandbox(
                DockerSandbox::start_with(self.config.clone(), self.clock.clone()).await?,
            )),
            BackendKind::Kubernetes => Running::Kubernetes(
                KubeSandbox::start(self.config.clone(), self.clock.clone()).await?,
            ),
        };
        *guard = Some(running.clone());
        Ok(running)
    }

    /// Connects the configured backend now (else on the first call).
    pub async fn connect(&self) -> Result<std::sync::Arc<dyn Sandbox>, SandboxError> {
        Ok(self.running().await?.sandbox())
    }

    /// The Docker backend, connected and reconciled unless already done;
    /// an error when `[sandbox] backend` is not `docker`.
    pub async fn start(&self) -> Result<SharedSandbox, SandboxError> {
        match self.running().await? {
            Running::Docker(s) => Ok(s),
            Running::Kubernetes(_) => Err(SandboxError::Config {
                key: "sandbox.backend".into(),
                reason: "is `kubernetes`: there is no Docker sandbox to hand out".into(),
            }),
        }
    }

    /// Removes every container or pod this host created.
    pub async fn shutdown(&self) {
        if let Some(s) = self.sandbox.lock().await.take() {
            s.sandbox().shutdown().await;
        }
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The call's deadline: the argument, else the configured default;
    /// never past the configured maximum or the gate's deadline.
    fn timeout(&self, call: &BackendCall<'_>) -> Duration {
        let asked = call
            .args
            .get("timeout_secs")
            .and_then(Value::as_u64)
            .unwrap_or(self.config.default_timeout_secs);
        Duration::from_secs(asked.min(self.config.max_timeout_secs).max(1))
            .min(call.limits.deadline)
    }

    /// Runs a command for a call in an image, shipping its log record.
    pub(crate) async fn run(
        &self,
        call: &BackendCall<'_>,
        kind: ImageKind,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        max_output: Option<usize>,
    ) -> Result<RunOutput, Failure> {
        let place = Place {
            kind,
            grants: call.grants,
            own_container: false,
            scratch_mb: None,
            timeout: self.timeout(call),
            read_only: false,
        };
        self.run_in(call, &place, argv, stdin, max_output).await
    }

    /// [`SandboxTools::run`] in a container described by `place` (other
    /// grants than the call's, a container of its own).
    pub(crate) async fn run_in(
        &self,
        call: &BackendCall<'_>,
        place: &Place<'_>,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        max_output: Option<usize>,
    ) -> Result<RunOutput, Failure> {
        let sandbox = self.connect().await?;
        let out = sandbox
            .run(RunRequest {
                kind: place.kind,
                context: call.context,
                grants: place.grants,
                argv,
                stdin,
                working_dir: None,
                timeout: place.timeout,
                max_output,
                paths: call.paths.cloned(),
                own_container: place.own_container,
                scratch_mb: place.scratch_mb,
                read_only: place.read_only,
            })
            .await?;
        crate::logs::ship(
            &self.config.logs,
            call.context,
            call.tool.name.as_str(),
            &out.container,
            &out.output,
        );
        if out.output.timed_out {
            return Err(Failure::new(
                ErrorType::LimitExceeded,
                "timeout",
                format!(
                    "`{}` ran past its {} s deadline; every process it started was killed (its container was removed). {}",
                    call.tool.name,
                    place.timeout.as_secs(),
                    tails(&out.output)
                ),
            ));
        }
        Ok(out)
    }

    async fn dispatch(&self, call: &BackendCall<'_>) -> Outcome {
        match call.tool.name.as_str() {
            "terminal_exec" => shell::terminal(self, call).await,
            "code_run" => shell::code(self, call).await,
            "browser_navigate" => browser::navigate(self, call).await,
            "browser_screenshot" => browser::screenshot(self, call).await,
            "browser_diff" => browser::diff(self, call).await,
            "browser_accessibility_scan" => browser::accessibility(self, call).await,
            "desktop_launch" => desktop::launch(self, call).await,
            name if name.starts_with("desktop_") => desktop::act(self, call).await,
            name if name.starts_with("git_") => git::call(self, call).await,
            other => Err(Failure::new(
                ErrorType::UnknownTool,
                "not_found",
                format!("the sandbox has no tool `{other}`"),
            )),
        }
    }
}

impl Backend for SandboxTools {
    fn tools(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Container
    }

    fn vcs_operation(
        &self,
        tool: &str,
        args: &Value,
        grants: &warden_api::Grants,
    ) -> Option<warden_api::VcsFacts> {
        git::operation(tool, args, &self.git_policy, Some(grants))
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            match self.dispatch(&call).await {
                Ok(data) => Envelope::ok(data),
                Err(f) => Envelope::error(f.kind, f.code, f.message),
            }
        })
    }

    /// Removes the task's per-task containers (nothing when the sandbox
    /// never started).
    fn end_task<'a>(&'a self, task: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let started = self.sandbox.lock().await.clone();
            if let Some(sandbox) = started {
                sandbox.sandbox().end_task(task).await;
            }
        })
    }
}

/// A required string argument.
pub(crate) fn arg<'a>(call: &'a BackendCall<'_>, name: &str) -> Result<&'a str, Failure> {
    call.args
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::args(format!("`{name}` is required")))
}

/// The workspace `grants` give, as the container sees it, and whether
/// it is writable.
pub(crate) fn workspace_of(grants: &warden_api::Grants) -> Option<(String, bool)> {
    grants
        .fs
        .iter()
        .find(|g| g.access != FsAccess::None)
        .map(|g| (g.guest_path.clone(), g.access == FsAccess::ReadWrite))
}

/// A workspace-relative path as the container's absolute path: refuses
/// absolute paths and `..`, so a tool argument never names a file outside
/// the workspace mount.
pub(crate) fn in_workspace(
    call: &BackendCall<'_>,
    rel: &str,
    write: bool,
) -> Result<String, Failure> {
    in_workspace_of(call.grants, rel, write)
}

/// [`in_workspace`] under `grants`.
pub(crate) fn in_workspace_of(
    grants: &warden_api::Grants,
    rel: &str,
    write: bool,
) -> Result<String, Failure> {
    let Some((root, writable)) = workspace_of(grants) else {
        return Err(Failure::new(
            ErrorType::PermissionDenied,
            "no_workspace",
            "the sandbox has no workspace grant: add `grant-fs` under [sandbox]",
        ));
    };
    if write && !writable {
        return Err(Failure::new(
            ErrorType::PermissionDenied,
            "workspace_read_only",
            format!(
                "the workspace {root} is granted read-only; writing `{rel}` needs a read-write grant (`:rw`)"
            ),
        ));
    }
    let ok = !rel.starts_with('/')
        && !rel.contains('\0')
        && rel
            .split('/')
            .all(|s| !s.is_empty() && s != ".." && s != ".");
    if !ok {
        return Err(Failure::args(format!(
            "`{rel}` must be a relative path inside the workspace (no `..`, no leading `/`)"
        )));
    }
    Ok(format!("{}/{rel}", root.trim_end_matches('/')))
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The last lines of both streams, for error messages.
pub(crate) fn tails(out: &ExecOutput) -> String {
    let tail = |b: &[u8]| {
        let t = text(b);
        let start = t.len().saturating_sub(600);
        let start = (start..t.len())
            .find(|&i| t.is_char_boundary(i))
            .unwrap_or(t.len());
        t[start..].trim().to_owned()
    };
    format!(
        "stdout: {:?}; stderr: {:?}",
        tail(&out.stdout),
        tail(&out.stderr)
    )
}

/// The sha256 and size a screenshot script printed (two lines), or an
/// error saying nothing was saved: never an empty capture.
pub(crate) fn saved_file(printed: &str) -> Result<(String, u64), Failure> {
    let mut lines = printed.lines();
    let sha = lines.next().unwrap_or_default().trim().to_owned();
    let bytes: u64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    if sha.len() != 64 || bytes == 0 {
        return Err(Failure::new(
            ErrorType::ToolError,
            "screenshot_failed",
            format!("no screenshot was saved: {printed:?}"),
        ));
    }
    Ok((sha, bytes))
}

/// An ok run whose command failed, as a tool error.
pub(crate) fn check_exit(out: &RunOutput, what: &str) -> Result<(), Failure> {
    match out.output.exit_code {
        Some(0) => Ok(()),
        code => Err(Failure::new(
            ErrorType::ToolError,
            "command_failed",
            format!("{what} failed (exit code {code:?}): {}", tails(&out.output)),
        )),
    }
}
