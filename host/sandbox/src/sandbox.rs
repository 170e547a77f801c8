//! [`Sandbox`]: run a command in a container chosen by the lifecycle
//! strategy — the interface every sandbox backend implements;
//! [`DockerSandbox`] is the implementation on a Docker engine (the
//! Kubernetes one is [`crate::KubeSandbox`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use warden_api::{BoxFuture, CallContext, Clock, Grants, PathGuard, SystemClock};

use crate::docker::{Docker, ExecOutput, ExecRequest};
use crate::images::ImageKind;
use crate::lifecycle::{Placement, Pool, Slot, place};
use crate::masks::Masks;
use crate::reconcile::{is_orphan, process_start, this_host};
use crate::spec::{
    HOST_ID_LABEL, HostIdentity, INSTANCE_LABEL, SpecInput, container_spec, mounts,
    names_to_resolve,
};
use crate::{SandboxConfig, SandboxError, Strategy};

mod standby;

/// One command to run for a call.
#[derive(Debug, Clone)]
pub struct RunRequest<'a> {
    pub kind: ImageKind,
    pub context: &'a CallContext,
    pub grants: &'a Grants,
    pub argv: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    /// Inside the container; the workspace when `None`.
    pub working_dir: Option<String>,
    pub timeout: Duration,
    /// Output kept per stream; the configured `max-output-bytes` when `None`.
    pub max_output: Option<usize>,
    /// The call's denied and protected paths, masked in the container's
    /// mounts (see [`crate::masks`]); `None`: nothing is masked.
    pub paths: Option<Arc<dyn PathGuard>>,
    /// A container of its own, removed when the command ends, whatever
    /// the configured strategy (a git network operation: its egress
    /// allowlist is the vetted addresses of this call alone).
    pub own_container: bool,
    /// With `own_container`: the size of its /tmp in MiB instead of the
    /// configured one, its memory limit raised by as much (tmpfs pages
    /// count as the container's memory): a disk quota for a clone.
    pub scratch_mb: Option<u64>,
    /// The call was allowed only because it reads: it runs in the owner's
    /// reader, made from [`Grants::read_only`] (every granted directory
    /// read-only, no network), never in a container that can write.
    pub read_only: bool,
}

/// How a command ran.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub output: ExecOutput,
    pub container: String,
    /// The strategy this call ran under (per-call when its owner was unknown).
    pub strategy: Strategy,
    /// True when the container was created for this call.
    pub cold: bool,
}

/// Runs commands for calls in containers (or pods) Warden manages: the
/// sandbox backend interface, implemented for Docker ([`SharedSandbox`])
/// and Kubernetes ([`crate::KubeSandbox`]).
pub trait Sandbox: Send + Sync {
    /// Runs one command in the container the strategy picks for the call.
    /// A deadline hit kills every process the command started and is
    /// reported as `timed_out`, not as an error.
    fn run<'a>(&'a self, request: RunRequest<'a>)
    -> BoxFuture<'a, Result<RunOutput, SandboxError>>;

    /// The task ended: removes its per-task containers.
    fn end_task<'a>(&'a self, task: &'a str) -> BoxFuture<'a, ()>;

    /// Removes every container this host owns; later runs fail.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// The Docker implementation of [`Sandbox`].
pub struct DockerSandbox {
    docker: Docker,
    config: SandboxConfig,
    host: HostIdentity,
    pool: Pool,
    owned: std::sync::Mutex<HashSet<String>>,
    closing: AtomicBool,
    /// Judges idle containers' grace periods.
    clock: Arc<dyn Clock>,
    /// One reaping pass at a time (the periodic one, or a caller's).
    reaping: tokio::sync::Mutex<()>,
    /// Fenced containers made ahead for network operations.
    standbys: standby::Standbys,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("config", &self.config)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// How often idle containers are checked against their grace period, at
/// most (a shorter grace period checks as often as it lasts).
const REAP_EVERY: Duration = Duration::from_secs(1);

impl DockerSandbox {
    /// Connects to the engine and removes orphans: managed containers
    /// whose host process is gone.
    pub async fn start(config: SandboxConfig) -> Result<Arc<DockerSandbox>, SandboxError> {
        DockerSandbox::start_with(config, Arc::new(SystemClock)).await
    }

    /// [`DockerSandbox::start`], judging grace periods by `clock`. A task
    /// removes containers idle past their grace period (see
    /// [`DockerSandbox::reap`]) until the sandbox shuts down or is dropped.
    pub async fn start_with(
        config: SandboxConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<DockerSandbox>, SandboxError> {
        let docker = Docker::connect().await?;
        let removed = reconcile(&docker, &config.instance).await?;
        if removed > 0 {
            tracing::info!(removed, "removed orphaned sandbox containers");
        }
        let every = REAP_EVERY
            .min(Duration::from_secs(config.grace_period_secs))
            .max(Duration::from_millis(100));
        let sandbox = Arc::new(DockerSandbox {
            docker,
            config,
            host: this_host(),
            pool: Pool::default(),
            owned: std::sync::Mutex::new(HashSet::new()),
            closing: AtomicBool::new(false),
            clock,
            reaping: tokio::sync::Mutex::new(()),
            standbys: standby::Standbys::default(),
        });
        crate::lifecycle::spawn_reaper(Arc::downgrade(&sandbox), every, |s| async move {
            if s.is_closing() {
                return false;
            }
            s.reap().await;
            true
        });
        Ok(sandbox)
    }

    /// Removes every pooled container idle for its grace period by the
    /// sandbox's clock; returns their ids. Waits for a pass in progress.
    pub async fn reap(&self) -> Vec<String> {
        let _one = self.reaping.lock().await;
        let grace_ms = self.config.grace_period_secs.saturating_mul(1000);
        let mut removed = Vec::new();
        for (key, id) in self
            .pool
            .take_expired_containers(self.clock.now_ms(), grace_ms)
            .await
        {
            tracing::debug!(container = %id, owner = %key.owner, "grace period over");
            self.remove(&id).await;
            removed.push(id);
        }
        removed
    }

    /// The connection to the Docker engine the containers run on.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The label value naming this host's containers.
    pub fn host_id(&self) -> &str {
        &self.host.id
    }

    fn owned(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.owned.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    async fn create(
        &self,
        kind: ImageKind,
        placement: &Placement,
        grants: &Grants,
        paths: Option<&Arc<dyn PathGuard>>,
        scratch_mb: Option<u64>,
    ) -> Result<String, SandboxError> {
        let spec = self
            .spec(kind, placement, grants, paths, scratch_mb)
            .await?;
        let id = self.docker.start(&spec).await?;
        self.owned().insert(id.clone());
        if self.is_closing() {
            self.remove(&id).await;
            return Err(SandboxError::ShuttingDown);
        }
        Ok(id)
    }

    /// The container spec for a call: its grants' mounts with the call's
    /// denied paths masked, the names its grants mention resolved now.
    async fn spec(
        &self,
        kind: ImageKind,
        placement: &Placement,
        grants: &Grants,
        paths: Option<&Arc<dyn PathGuard>>,
        scratch_mb: Option<u64>,
    ) -> Result<crate::spec::ContainerSpec, SandboxError> {
        if self.is_closing() {
            return Err(SandboxError::ShuttingDown);
        }
        let masks = match paths {
            Some(guard) => {
                let (mounts, guard) = (mounts(grants)?, Arc::clone(guard));
                tokio::task::spawn_blocking(move || Masks::find(&mounts, guard.as_ref()))
                    .await
                    .map_err(|e| SandboxError::Grant {
                        reason: format!("finding the paths to mask failed: {e}"),
                    })??
            }
            None => Masks::default(),
        };
        let resolved = resolve(grants).await?;
        let input = SpecInput {
            kind,
            host: &self.host,
            owner: &placement.labels,
            resolved: &resolved,
            masks: &masks,
        };
        match scratch_mb {
            Some(mb) => {
                let config = SandboxConfig {
                    tmpfs_mb: mb,
                    memory_mb: self.config.memory_mb.saturating_add(mb),
                    ..self.config.clone()
                };
                container_spec(&input, grants, &config)
            }
            None => container_spec(&input, grants, &self.config),
        }
    }

    async fn remove(&self, id: &str) {
        if let Err(e) = self.docker.remove(id).await {
            tracing::warn!(container = id, error = %e, "removing a sandbox container failed");
        }
        self.owned().remove(id);
    }

    /// The pooled container of `key`, created on first use.
    async fn pooled(
        &self,
        slot: &Slot,
        kind: ImageKind,
        placement: &Placement,
        request: &RunRequest<'_>,
    ) -> Result<(String, bool), SandboxError> {
        let mut container = slot.container.lock().await;
        if let Some(id) = container.as_ref() {
            return Ok((id.clone(), false));
        }
        let id = self
            .create(
                kind,
                placement,
                request.grants,
                request.paths.as_ref(),
                None,
            )
            .await?;
        *container = Some(id.clone());
        Ok((id, true))
    }

    fn release(&self, slot: &Slot) {
        self.pool.release(slot, self.clock.now_ms());
    }

    /// Runs the request's command in `container`; `true` beside the output
    /// when the container must go. A command past its deadline takes its
    /// container with it: removing the container is the one kill that
    /// reaches every process the call started — children in sessions of
    /// their own (`setsid`), with cleared environments, reparented to
    /// init — and it needs no state inside the container, where the agent
    /// could write. Other calls running in that container end too.
    async fn exec(
        &self,
        container: &str,
        request: &RunRequest<'_>,
    ) -> Result<(ExecOutput, bool), SandboxError> {
        let c = request.context;
        let env = vec![
            ("WARDEN_AGENT_ID".to_owned(), c.agent.clone()),
            ("WARDEN_SESSION_ID".to_owned(), c.session.clone()),
            (
                "WARDEN_TASK_ID".to_owned(),
                c.task.clone().unwrap_or_default(),
            ),
            ("WARDEN_REQUEST_ID".to_owned(), c.request_id.clone()),
        ];
        let exec = ExecRequest {
            argv: request.argv.clone(),
            env,
            user: None,
            working_dir: request.working_dir.clone(),
            stdin: request.stdin.clone(),
            deadline: Some(Instant::now() + request.timeout),
            max_bytes: request.max_output.unwrap_or_else(|| {
                usize::try_from(self.config.max_output_bytes).unwrap_or(usize::MAX)
            }),
        };
        let out = self.docker.exec(container, &exec).await?;
        if out.timed_out {
            tracing::info!(
                container,
                "removing a sandbox container: a command in it ran past its deadline"
            );
        }
        let reset = out.timed_out;
        Ok((out, reset))
    }
}

/// The grants a call's container is made from: the reader's view
/// ([`Grants::read_only`]) for a call allowed only because it reads.
pub(crate) fn container_grants(grants: &Grants, read_only: bool) -> Cow<'_, Grants> {
    if read_only {
        Cow::Owned(grants.read_only())
    } else {
        Cow::Borrowed(grants)
    }
}

/// The addresses of the names `grants` mention, resolved now.
pub(crate) async fn resolve(
    grants: &Grants,
) -> Result<BTreeMap<String, Vec<std::net::IpAddr>>, SandboxError> {
    let mut resolved = BTreeMap::new();
    for name in names_to_resolve(grants) {
        let addrs = tokio::net::lookup_host((name.as_str(), 0))
            .await
            .map_err(|e| SandboxError::Grant {
                reason: format!("resolving `{name}`: {e}"),
            })?
            .map(|a| a.ip())
            .collect();
        resolved.insert(name, addrs);
    }
    Ok(resolved)
}

/// Removes the containers of this Warden instance whose host process is
/// gone; returns how many. Containers of other instances (another state
/// directory, another machine or PID namespace sharing the engine) and
/// anything without the instance label are never touched.
pub async fn reconcile(docker: &Docker, instance: &str) -> Result<usize, SandboxError> {
    let mut removed = 0;
    for c in docker.list_managed(&[(INSTANCE_LABEL, instance)]).await? {
        if is_orphan(&c.labels, process_start) {
            docker.remove(&c.id).await?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// [`Sandbox`] over an `Arc<DockerSandbox>`: the grace timers need to own
/// the sandbox.
#[derive(Debug, Clone)]
pub struct SharedSandbox(pub Arc<DockerSandbox>);

impl Sandbox for SharedSandbox {
    fn run<'a>(
        &'a self,
        request: RunRequest<'a>,
    ) -> BoxFuture<'a, Result<RunOutput, SandboxError>> {
        Box::pin(async move {
            let this = &self.0;
            if this.closing.load(Ordering::SeqCst) {
                return Err(SandboxError::ShuttingDown);
            }
            // An approved call may change protected paths: it gets a
            // container of its own, so that view never outlives it.
            let approved = request.paths.as_ref().is_some_and(|g| g.approved());
            let strategy = if approved || request.own_container {
                Strategy::PerCall
            } else {
                this.config.strategy
            };
            let placement = place(strategy, request.kind, request.read_only, request.context);
            let grants = container_grants(request.grants, request.read_only);
            let request = RunRequest {
                grants: &grants,
                ..request
            };
            match placement.key.clone() {
                Some(key) => {
                    let slot = this.pool.acquire(&key);
                    let result = async {
                        let (id, cold) = this
                            .pooled(&slot, request.kind, &placement, &request)
                            .await?;
                        let (output, reset) = this.exec(&id, &request).await?;
                        if reset {
                            let mut held = slot.container.lock().await;
                            if held.as_deref() == Some(id.as_str()) {
                                held.take();
                                this.remove(&id).await;
                            }
                        }
                        Ok(RunOutput {
                            output,
                            container: id,
                            strategy: placement.labels.strategy,
                            cold,
                        })
                    }
                    .await;
                    this.release(&slot);
                    result
                }
                None if request.own_container => {
                    let recipe = standby::Recipe {
                        kind: request.kind,
                        placement,
                        grants: request.grants.clone(),
                        paths: request.paths.clone(),
                        scratch_mb: request.scratch_mb,
                    };
                    let (output, id) = this.run_fenced(recipe, &request).await?;
                    Ok(RunOutput {
                        output,
                        container: id,
                        strategy: Strategy::PerCall,
                        cold: true,
                    })
                }
                None => {
                    let id = this
                        .create(
                            request.kind,
                            &placement,
                            request.grants,
                            request.paths.as_ref(),
                            None,
                        )
                        .await?;
                    let output = this.exec(&id, &request).await;
                    this.remove(&id).await;
                    Ok(RunOutput {
                        output: output?.0,
                        container: id,
                        strategy: Strategy::PerCall,
                        cold: true,
                    })
                }
            }
        })
    }

    fn end_task<'a>(&'a self, task: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for id in self.0.pool.take_task_containers(task).await {
                self.0.remove(&id).await;
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let this = &self.0;
            this.closing.store(true, Ordering::SeqCst);
            for id in this.pool.drain_containers().await {
                this.remove(&id).await;
            }
            this.discard_standbys().await;
            this.settle().await;
            let left: Vec<String> = this.owned().iter().cloned().collect();
            for id in left {
                this.remove(&id).await;
            }
            // Anything labelled as ours that the bookkeeping missed.
            if let Ok(list) = this
                .docker
                .list_managed(&[(HOST_ID_LABEL, this.host.id.as_str())])
                .await
            {
                for c in list {
                    this.remove(&c.id).await;
                }
            }
        })
    }
}
