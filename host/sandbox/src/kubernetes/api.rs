//! The connection to the Kubernetes API server: the one file that uses
//! kube-rs and k8s-openapi types. Manifests arrive as JSON from
//! [`super::manifests`] and are typed here; API errors become
//! [`SandboxError`]s that say what was refused and what would fix it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    LimitRange, Namespace, PersistentVolumeClaim, Pod, ResourceQuota,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, AttachParams, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::config::{Connection, KubernetesSettings};
use super::manifests::CONTAINER;
use crate::docker::ExecOutput;
use crate::error::SandboxError;

/// The field manager of Warden's server-side applies.
const MANAGER: &str = "warden";

/// A Kubernetes client bound to the sandbox namespace.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    namespace: String,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// A managed object found by label: its name and labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// A pod's progress towards running.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Progress {
    Running,
    Waiting,
    Failed(String),
}

fn unavailable(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::KubernetesUnavailable {
        reason: e.to_string(),
    }
}

impl Cluster {
    /// Connects as `[sandbox.kubernetes]` says.
    pub async fn connect(k: &KubernetesSettings) -> Result<Cluster, SandboxError> {
        let options = KubeConfigOptions {
            context: k.context.clone(),
            ..KubeConfigOptions::default()
        };
        let config = match (&k.connection, &k.kubeconfig) {
            (Connection::InCluster, _) => Config::incluster().map_err(unavailable)?,
            (_, Some(path)) => {
                let file = Kubeconfig::read_from(path).map_err(|e| {
                    unavailable(format!("reading kubeconfig {}: {e}", path.display()))
                })?;
                Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(unavailable)?
            }
            (_, None) if k.context.is_some() => Config::from_kubeconfig(&options)
                .await
                .map_err(unavailable)?,
            (_, None) => Config::infer().await.map_err(unavailable)?,
        };
        Cluster::with_config(config, &k.namespace)
    }

    /// A client for the API server at `config`'s URL (tests point it at a
    /// fake server on loopback).
    pub fn with_config(config: Config, namespace: &str) -> Result<Cluster, SandboxError> {
        let client = Client::try_from(config).map_err(unavailable)?;
        Ok(Cluster {
            client,
            namespace: namespace.to_owned(),
        })
    }

    fn error(&self, operation: &str, e: kube::Error) -> SandboxError {
        match e {
            kube::Error::Api(s) if s.code == 403 && s.message.contains("exceeded quota") => {
                SandboxError::QuotaExceeded {
                    namespace: self.namespace.clone(),
                    reason: s.message,
                }
            }
            kube::Error::Api(s) => SandboxError::Kubernetes {
                operation: operation.to_owned(),
                reason: format!("{} (HTTP {}, {})", s.message, s.code, s.reason),
            },
            other => unavailable(format!("{operation}: {other}")),
        }
    }

    fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, SandboxError> {
        serde_json::from_value(value).map_err(|e| SandboxError::Kubernetes {
            operation: "build a manifest".into(),
            reason: e.to_string(),
        })
    }

    fn name_of(value: &Value) -> String {
        value["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Creates or updates an object (server-side apply): the namespace,
    /// its NetworkPolicies, ResourceQuota and LimitRange.
    pub async fn apply(&self, value: Value) -> Result<(), SandboxError> {
        let name = Cluster::name_of(&value);
        let kind = value["kind"].as_str().unwrap_or_default().to_owned();
        let params = PatchParams::apply(MANAGER).force();
        let what = format!("apply {kind} {name}");
        let result = match kind.as_str() {
            "Namespace" => {
                let obj: Namespace = Cluster::typed(value)?;
                Api::<Namespace>::all(self.client.clone())
                    .patch(&name, &params, &Patch::Apply(obj))
                    .await
                    .map(drop)
            }
            "NetworkPolicy" => {
                let obj: NetworkPolicy = Cluster::typed(value)?;
                self.api::<NetworkPolicy>()
                    .patch(&name, &params, &Patch::Apply(obj))
                    .await
                    .map(drop)
            }
            "ResourceQuota" => {
                let obj: ResourceQuota = Cluster::typed(value)?;
                self.api::<ResourceQuota>()
                    .patch(&name, &params, &Patch::Apply(obj))
                    .await
                    .map(drop)
            }
            "LimitRange" => {
                let obj: LimitRange = Cluster::typed(value)?;
                self.api::<LimitRange>()
                    .patch(&name, &params, &Patch::Apply(obj))
                    .await
                    .map(drop)
            }
            other => {
                return Err(SandboxError::Kubernetes {
                    operation: what,
                    reason: format!("Warden applies no `{other}`"),
                });
            }
        };
        result.map_err(|e| self.error(&what, e))
    }

    /// Makes a workspace claim unless one of its name exists; one that
    /// exists must carry the same owner annotations (the agent and the
    /// directory), or it is refused: another owner's files are never
    /// mounted.
    pub async fn ensure_claim(&self, value: Value) -> Result<(), SandboxError> {
        let name = Cluster::name_of(&value);
        let what = format!("create PersistentVolumeClaim {name}");
        let wanted = value["metadata"]["annotations"].clone();
        let claim: PersistentVolumeClaim = Cluster::typed(value)?;
        let api = self.api::<PersistentVolumeClaim>();
        match api.create(&PostParams::default(), &claim).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(self.error(&what, e)),
        }
        let found = api
            .get(&name)
            .await
            .map_err(|e| self.error(&format!("read PersistentVolumeClaim {name}"), e))?;
        let owners = serde_json::to_value(&found.metadata.annotations).unwrap_or_default();
        let same = wanted
            .as_object()
            .is_some_and(|w| w.iter().all(|(k, v)| owners.get(k) == Some(v)));
        if same {
            Ok(())
        } else {
            Err(SandboxError::Kubernetes {
                operation: what,
                reason: format!(
                    "a claim of that name exists for another owner ({owners}); \
                     delete it if it is not in use"
                ),
            })
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Creates a pod; a full quota is [`SandboxError::QuotaExceeded`].
    pub async fn create_pod(&self, value: Value) -> Result<(), SandboxError> {
        let name = Cluster::name_of(&value);
        let pod: Pod = Cluster::typed(value)?;
        self.api::<Pod>()
            .create(&PostParams::default(), &pod)
            .await
            .map(drop)
            .map_err(|e| self.error(&format!("create pod {name}"), e))
    }

    /// Waits until `pod`'s container runs, at most `timeout`; a pod that
    /// cannot start (image missing, rejected, ended) fails at once.
    pub async fn wait_running(&self, pod: &str, timeout: Duration) -> Result<(), SandboxError> {
        let until = Instant::now() + timeout;
        let api = self.api::<Pod>();
        let mut last = "pending".to_owned();
        loop {
            let found = api
                .get(pod)
                .await
                .map_err(|e| self.error(&format!("read pod {pod}"), e))?;
            match progress(&found) {
                Progress::Running => return Ok(()),
                Progress::Failed(reason) => {
                    return Err(SandboxError::PodStart {
                        pod: pod.to_owned(),
                        reason,
                    });
                }
                Progress::Waiting => {}
            }
            if let Some(status) = &found.status {
                last = status.phase.clone().unwrap_or(last);
            }
            if Instant::now() >= until {
                return Err(SandboxError::PodStart {
                    pod: pod.to_owned(),
                    reason: format!(
                        "still {last} after {} s (`[sandbox.kubernetes] startup-timeout-secs`)",
                        timeout.as_secs()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Managed pods matching `selector` (`k=v,k2=v2`).
    pub async fn list_pods(&self, selector: &str) -> Result<Vec<Found>, SandboxError> {
        let list = self
            .api::<Pod>()
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| self.error("list pods", e))?;
        Ok(list.items.into_iter().map(|p| found(p.metadata)).collect())
    }

    /// Managed NetworkPolicies matching `selector`.
    pub async fn list_policies(&self, selector: &str) -> Result<Vec<Found>, SandboxError> {
        let list = self
            .api::<NetworkPolicy>()
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| self.error("list network policies", e))?;
        Ok(list.items.into_iter().map(|p| found(p.metadata)).collect())
    }

    /// Deletes a pod at once (no grace period); gone already is fine.
    pub async fn delete_pod(&self, name: &str) -> Result<(), SandboxError> {
        let params = DeleteParams::default().grace_period(0);
        match self.api::<Pod>().delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(self.error(&format!("delete pod {name}"), e)),
        }
    }

    /// Deletes a NetworkPolicy; gone already is fine.
    pub async fn delete_policy(&self, name: &str) -> Result<(), SandboxError> {
        match self
            .api::<NetworkPolicy>()
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(self.error(&format!("delete network policy {name}"), e)),
        }
    }

    /// Runs `argv` in the pod's container over the exec subresource,
    /// keeping `max_bytes` per stream; past `deadline` the output so far
    /// comes back `timed_out` (the caller removes the pod: the one kill
    /// that reaches every process the command started).
    pub async fn exec(
        &self,
        pod: &str,
        argv: Vec<String>,
        stdin: Option<Vec<u8>>,
        deadline: Instant,
        max_bytes: usize,
    ) -> Result<ExecOutput, SandboxError> {
        let started = Instant::now();
        let params = AttachParams::default()
            .container(CONTAINER)
            .stdin(stdin.is_some())
            .stdout(true)
            .stderr(true);
        let mut process = self
            .api::<Pod>()
            .exec(pod, argv, &params)
            .await
            .map_err(|e| self.error(&format!("exec in pod {pod}"), e))?;
        let status = process.take_status();
        if let (Some(data), Some(mut writer)) = (stdin, process.stdin()) {
            tokio::spawn(async move {
                // A command that never reads its stdin is not an error.
                let _ = writer.write_all(&data).await;
                let _ = writer.shutdown().await;
            });
        }
        let (mut out, mut err) = (Capped::new(max_bytes), Capped::new(max_bytes));
        let stdout = process.stdout();
        let stderr = process.stderr();
        let streams = async {
            tokio::join!(out.drain(stdout), err.drain(stderr));
            match status {
                Some(s) => s.await,
                None => None,
            }
        };
        let until = tokio::time::Instant::from_std(deadline);
        let (exit_code, timed_out) = match tokio::time::timeout_at(until, streams).await {
            Ok(status) => (Some(exit_code(pod, status)?), false),
            Err(_) => {
                process.abort();
                (None, true)
            }
        };
        Ok(ExecOutput {
            stdout: out.kept,
            stderr: err.kept,
            stdout_total: out.total,
            stderr_total: err.total,
            exit_code,
            timed_out,
            elapsed: started.elapsed(),
        })
    }
}

/// A stream's output: the first bytes kept, the total counted.
struct Capped {
    kept: Vec<u8>,
    total: u64,
    max: usize,
}

impl Capped {
    fn new(max: usize) -> Capped {
        Capped {
            kept: Vec::new(),
            total: 0,
            max,
        }
    }

    async fn drain(&mut self, stream: Option<impl AsyncRead + Unpin>) {
        let Some(mut stream) = stream else {
            return;
        };
        let mut buf = [0u8; 16 << 10];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            self.total = self.total.saturating_add(n as u64);
            let room = self.max.saturating_sub(self.kept.len()).min(n);
            self.kept.extend_from_slice(&buf[..room]);
        }
    }
}

/// The exit code an exec's status reports: `Success` is 0, a
/// `NonZeroExitCode` carries its code as a cause.
fn exit_code(
    pod: &str,
    status: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) -> Result<i64, SandboxError> {
    let Some(status) = status else {
        return Err(SandboxError::Kubernetes {
            operation: format!("exec in pod {pod}"),
            reason: "the connection closed before the command's exit status".into(),
        });
    };
    if status.status.as_deref() == Some("Success") {
        return Ok(0);
    }
    status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
        .and_then(|c| c.message.as_deref()?.parse().ok())
        .ok_or_else(|| SandboxError::Kubernetes {
            operation: format!("exec in pod {pod}"),
            reason: status.message.clone().unwrap_or_default(),
        })
}

fn found(meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Found {
    Found {
        name: meta.name.unwrap_or_default(),
        labels: meta.labels.unwrap_or_default(),
    }
}

/// Whether a pod runs, may still, or never will.
fn progress(pod: &Pod) -> Progress {
    let Some(status) = &pod.status else {
        return Progress::Waiting;
    };
    match status.phase.as_deref() {
        Some("Running") => return Progress::Running,
        Some(phase @ ("Failed" | "Succeeded")) => {
            return Progress::Failed(format!(
                "it ended ({phase}): {}",
                status.message.clone().unwrap_or_default()
            ));
        }
        _ => {}
    }
    let waiting = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref());
    for w in waiting {
        let reason = w.reason.as_deref().unwrap_or_default();
        if matches!(
            reason,
            "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "CreateContainerConfigError"
        ) {
            return Progress::Failed(format!(
                "{reason}: {} (push the sandbox images the cluster pulls, `[sandbox.kubernetes] image-repository`)",
                w.message.clone().unwrap_or_default()
            ));
        }
    }
    Progress::Waiting
}
