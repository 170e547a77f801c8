//! The Kubernetes backend of [`Sandbox`]: one pod per agent, task or call
//! (the lifecycle strategies of the Docker backend), in a namespace that
//! holds a default-deny NetworkPolicy, a ResourceQuota and a LimitRange
//! before any pod exists; commands run over the API's exec subresource.
//!
//! Host directories are never mounted into cluster pods: a granted
//! workspace is an `emptyDir` scratch volume that lives as long as its
//! pod (files written by one call are seen by the next call of the same
//! agent or task, not by the host), or, with `workspaces = "per-agent"`,
//! a PersistentVolumeClaim of the agent that every pod of that agent
//! mounts (made before its first pod, kept after).

mod api;
mod config;
pub mod manifests;
mod reconcile;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use warden_api::{BoxFuture, Clock, Grants, SystemClock};

pub use api::{Cluster, Found};
pub use config::{
    AccessMode, BackendKind, Connection, Invalid, KubernetesSettings, PullPolicy, WorkspaceScope,
    is_dns_label, is_label_value,
};
pub use reconcile::{host_name, reconcile};

use crate::docker::ExecOutput;
use crate::images::ImageKind;
use crate::lifecycle::{Placement, Pool, Slot, place};
use crate::reconcile::this_host;
use crate::sandbox::{RunOutput, RunRequest, Sandbox, resolve};
use crate::spec::{
    AGENT_LABEL, HOST_ID_LABEL, HOST_PID_LABEL, HOST_START_LABEL, HostIdentity, IMAGE_LABEL,
    STRATEGY_LABEL, TASK_LABEL, mounts, network,
};
use crate::{SandboxConfig, SandboxError, Strategy};
use manifests::{HOST_NAME_LABEL, POD_LABEL, PodInput, Workspace};

/// Sandboxes as pods on a Kubernetes cluster.
pub struct KubeSandbox {
    cluster: Cluster,
    config: SandboxConfig,
    host: HostIdentity,
    host_name: String,
    pool: Pool,
    owned: std::sync::Mutex<HashSet<String>>,
    closing: AtomicBool,
    clock: Arc<dyn Clock>,
    reaping: tokio::sync::Mutex<()>,
    made: AtomicU64,
    /// Workspace claims known to exist and to be the agent's.
    claims: tokio::sync::Mutex<HashSet<String>>,
}

impl std::fmt::Debug for KubeSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeSandbox")
            .field("cluster", &self.cluster)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// How often idle pods are checked against their grace period, at most.
const REAP_EVERY: Duration = Duration::from_secs(1);

impl KubeSandbox {
    /// Connects as `[sandbox.kubernetes]` says, then [`KubeSandbox::start_on`].
    pub async fn start(
        config: SandboxConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<KubeSandbox>, SandboxError> {
        config.validate()?;
        let cluster = Cluster::connect(&config.kubernetes).await?;
        KubeSandbox::start_on(cluster, config, clock).await
    }

    /// Prepares the namespace (namespace, default-deny policy, quota,
    /// limit range, in that order), removes the pods a previous run of
    /// this host left behind, and starts the grace-period reaper.
    pub async fn start_on(
        cluster: Cluster,
        config: SandboxConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<KubeSandbox>, SandboxError> {
        let k = &config.kubernetes;
        if k.manage_namespace {
            cluster
                .apply(manifests::namespace(k, &config.instance))
                .await?;
        }
        cluster
            .apply(manifests::deny_all(k, &config.instance))
            .await?;
        cluster.apply(manifests::quota(k, &config.instance)).await?;
        cluster
            .apply(manifests::limit_range(k, &config, &config.instance))
            .await?;
        let host_name = host_name();
        let removed = reconcile(&cluster, &config.instance, &host_name).await?;
        if removed > 0 {
            tracing::info!(removed, "removed orphaned sandbox pods");
        }
        let every = REAP_EVERY
            .min(Duration::from_secs(config.grace_period_secs))
            .max(Duration::from_millis(100));
        let sandbox = Arc::new(KubeSandbox {
            cluster,
            config,
            host: this_host(),
            host_name,
            pool: Pool::default(),
            owned: std::sync::Mutex::new(HashSet::new()),
            closing: AtomicBool::new(false),
            clock,
            reaping: tokio::sync::Mutex::new(()),
            made: AtomicU64::new(0),
            claims: tokio::sync::Mutex::new(HashSet::new()),
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

    /// [`KubeSandbox::start`] with the system clock.
    pub async fn connect(config: SandboxConfig) -> Result<Arc<KubeSandbox>, SandboxError> {
        KubeSandbox::start(config, Arc::new(SystemClock)).await
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The label value naming this host's pods.
    pub fn host_id(&self) -> &str {
        &self.host.id
    }

    /// Removes every pooled pod idle for its grace period; returns names.
    pub async fn reap(&self) -> Vec<String> {
        let _one = self.reaping.lock().await;
        let grace_ms = self.config.grace_period_secs.saturating_mul(1000);
        let mut removed = Vec::new();
        for (_, pod) in self
            .pool
            .take_expired_containers(self.clock.now_ms(), grace_ms)
            .await
        {
            self.remove(&pod).await;
            removed.push(pod);
        }
        removed
    }

    fn owned(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.owned.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// The labels of a pod (and its egress policy) for `placement`.
    fn labels(&self, pod: &str, kind: ImageKind, placement: &Placement) -> Labels {
        let mut labels = manifests::base_labels(&self.config.instance);
        labels.insert(HOST_ID_LABEL.into(), self.host.id.clone());
        labels.insert(HOST_PID_LABEL.into(), self.host.pid.to_string());
        labels.insert(HOST_START_LABEL.into(), self.host.start.to_string());
        labels.insert(HOST_NAME_LABEL.into(), self.host_name.clone());
        labels.insert(
            STRATEGY_LABEL.into(),
            placement.labels.strategy.as_str().into(),
        );
        labels.insert(IMAGE_LABEL.into(), kind.as_str().into());
        labels.insert(POD_LABEL.into(), pod.to_owned());
        let mut annotations = BTreeMap::new();
        annotations.insert(AGENT_LABEL.to_owned(), placement.labels.agent.clone());
        if let Some(task) = &placement.labels.task {
            annotations.insert(TASK_LABEL.to_owned(), task.clone());
        }
        Labels {
            labels,
            annotations,
        }
    }

    /// Creates a pod for a call and waits until it runs: its egress
    /// policy first (when its grants allow any network), then the pod.
    pub(crate) async fn create(
        &self,
        kind: ImageKind,
        placement: &Placement,
        grants: &Grants,
        scratch_mb: Option<u64>,
    ) -> Result<String, SandboxError> {
        if self.is_closing() {
            return Err(SandboxError::ShuttingDown);
        }
        let resolved = resolve(grants).await?;
        let (net, pins) = network(&grants.net, &resolved)?;
        let workspaces = self.workspaces(grants, &placement.labels.agent).await?;
        let n = self.made.fetch_add(1, Ordering::SeqCst);
        let pod = format!("warden-{}-{}-{n}", kind.as_str(), self.host.id);
        let Labels {
            mut labels,
            annotations,
        } = self.labels(&pod, kind, placement);
        let k = &self.config.kubernetes;
        if k.workspaces == WorkspaceScope::PerAgent {
            labels.insert(
                manifests::AGENT_WORKSPACE_LABEL.into(),
                manifests::agent_workspace_label(&self.config.deployment, &placement.labels.agent),
            );
        }
        let policy = manifests::egress(k, &pod, &net, &labels);
        let has_policy = policy.is_some();
        if let Some(policy) = policy {
            self.cluster.apply(policy).await?;
        }
        let input = PodInput {
            name: &pod,
            kind,
            labels: &labels,
            annotations: &annotations,
            workspaces: &workspaces,
            pins: &pins,
            tmpfs_mb: scratch_mb.unwrap_or(self.config.tmpfs_mb),
            memory_mb: self
                .config
                .memory_mb
                .saturating_add(scratch_mb.unwrap_or(0)),
        };
        let manifest = manifests::pod(k, &self.config, &input);
        if let Err(e) = self.cluster.create_pod(manifest).await {
            if has_policy {
                self.drop_policy(&pod).await;
            }
            return Err(e);
        }
        self.owned().insert(pod.clone());
        let startup = Duration::from_secs(k.startup_timeout_secs);
        if let Err(e) = self.cluster.wait_running(&pod, startup).await {
            self.remove(&pod).await;
            return Err(e);
        }
        if self.is_closing() {
            self.remove(&pod).await;
            return Err(SandboxError::ShuttingDown);
        }
        Ok(pod)
    }

    /// The granted directories of `agent`'s pod: `emptyDir`s, or the
    /// agent's claims, each made (or found, and checked to be the
    /// agent's) before the pod that mounts it.
    async fn workspaces(
        &self,
        grants: &Grants,
        agent: &str,
    ) -> Result<Vec<Workspace>, SandboxError> {
        let k = &self.config.kubernetes;
        let per_agent = k.workspaces == WorkspaceScope::PerAgent;
        let mut out = Vec::new();
        for m in mounts(grants)? {
            let claim = if per_agent {
                let manifest = manifests::claim(k, &self.config.deployment, agent, &m.guest);
                let name = manifests::claim_name(&self.config.deployment, agent, &m.guest);
                let mut known = self.claims.lock().await;
                if !known.contains(&name) {
                    self.cluster.ensure_claim(manifest).await?;
                    known.insert(name.clone());
                }
                Some(name)
            } else {
                None
            };
            out.push(Workspace {
                guest: m.guest,
                writable: !m.read_only,
                claim,
            });
        }
        Ok(out)
    }

    async fn drop_policy(&self, pod: &str) {
        if let Err(e) = self.cluster.delete_policy(&format!("{pod}-egress")).await {
            tracing::warn!(pod, error = %e, "removing a sandbox egress policy failed");
        }
    }

    /// Deletes a pod and its egress policy.
    pub(crate) async fn remove(&self, pod: &str) {
        if let Err(e) = self.cluster.delete_pod(pod).await {
            tracing::warn!(pod, error = %e, "removing a sandbox pod failed");
        }
        self.drop_policy(pod).await;
        self.owned().remove(pod);
    }

    async fn exec(&self, pod: &str, request: &RunRequest<'_>) -> Result<ExecOutput, SandboxError> {
        let c = request.context;
        let mut argv = vec!["env".to_owned()];
        if let Some(dir) = &request.working_dir {
            argv.extend(["-C".to_owned(), dir.clone()]);
        }
        argv.push("--".into());
        argv.extend([
            format!("WARDEN_AGENT_ID={}", c.agent),
            format!("WARDEN_SESSION_ID={}", c.session),
            format!("WARDEN_TASK_ID={}", c.task.clone().unwrap_or_default()),
            format!("WARDEN_REQUEST_ID={}", c.request_id),
        ]);
        argv.extend(request.argv.iter().cloned());
        let max = request
            .max_output
            .unwrap_or_else(|| usize::try_from(self.config.max_output_bytes).unwrap_or(usize::MAX));
        let out = self
            .cluster
            .exec(
                pod,
                argv,
                request.stdin.clone(),
                Instant::now() + request.timeout,
                max,
            )
            .await?;
        if out.timed_out {
            tracing::info!(
                pod,
                "removing a sandbox pod: a command in it ran past its deadline"
            );
        }
        Ok(out)
    }

    /// The pooled pod of `slot`, created on first use; true when new.
    pub(crate) async fn pooled(
        &self,
        slot: &Slot,
        kind: ImageKind,
        placement: &Placement,
        grants: &Grants,
    ) -> Result<(String, bool), SandboxError> {
        let mut held = slot.container.lock().await;
        if let Some(pod) = held.as_ref() {
            return Ok((pod.clone(), false));
        }
        let pod = self.create(kind, placement, grants, None).await?;
        *held = Some(pod.clone());
        Ok((pod, true))
    }

    async fn run_pooled(
        &self,
        slot: &Slot,
        placement: &Placement,
        request: &RunRequest<'_>,
    ) -> Result<RunOutput, SandboxError> {
        let (pod, cold) = self
            .pooled(slot, request.kind, placement, request.grants)
            .await?;
        let output = self.exec(&pod, request).await?;
        if output.timed_out {
            let mut held = slot.container.lock().await;
            if held.as_deref() == Some(pod.as_str()) {
                held.take();
                self.remove(&pod).await;
            }
        }
        Ok(RunOutput {
            output,
            container: pod,
            strategy: placement.labels.strategy,
            cold,
        })
    }
}

struct Labels {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

impl Sandbox for KubeSandbox {
    fn run<'a>(
        &'a self,
        request: RunRequest<'a>,
    ) -> BoxFuture<'a, Result<RunOutput, SandboxError>> {
        Box::pin(async move {
            if self.is_closing() {
                return Err(SandboxError::ShuttingDown);
            }
            let approved = request.paths.as_ref().is_some_and(|g| g.approved());
            let strategy = if approved || request.own_container {
                Strategy::PerCall
            } else {
                self.config.strategy
            };
            // A reader pod sees the agent's files only when they live in a
            // claim every pod of the agent mounts; a per-pod workspace is
            // the agent's pod's own, so its reads run there (docs/sandbox.md).
            let read_only =
                request.read_only && self.config.kubernetes.workspaces == WorkspaceScope::PerAgent;
            let placement = place(strategy, request.kind, read_only, request.context);
            let grants = crate::sandbox::container_grants(request.grants, read_only);
            let request = RunRequest {
                grants: &grants,
                ..request
            };
            if let Some(key) = placement.key.clone() {
                let slot = self.pool.acquire(&key);
                let result = self.run_pooled(&slot, &placement, &request).await;
                self.pool.release(&slot, self.clock.now_ms());
                return result;
            }
            let scratch = request.scratch_mb.filter(|_| request.own_container);
            let pod = self
                .create(request.kind, &placement, request.grants, scratch)
                .await?;
            let output = self.exec(&pod, &request).await;
            self.remove(&pod).await;
            Ok(RunOutput {
                output: output?,
                container: pod,
                strategy: Strategy::PerCall,
                cold: true,
            })
        })
    }

    fn end_task<'a>(&'a self, task: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for pod in self.pool.take_task_containers(task).await {
                self.remove(&pod).await;
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closing.store(true, Ordering::SeqCst);
            for pod in self.pool.drain_containers().await {
                self.remove(&pod).await;
            }
            let left: Vec<String> = self.owned().iter().cloned().collect();
            for pod in left {
                self.remove(&pod).await;
            }
            // Anything labelled as ours that the bookkeeping missed.
            let selector = format!("{HOST_ID_LABEL}={}", self.host.id);
            if let Ok(list) = self.cluster.list_pods(&selector).await {
                for pod in list {
                    self.remove(&pod.name).await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests;
