//! `[sandbox] backend` and the `[sandbox.kubernetes]` table: where the
//! Kubernetes backend puts its pods and how it reaches the API server.
//! Defaults deny: no egress beyond the grants, small quotas, no runtime
//! class (the cluster's default runtime) unless one is named.

use serde::{Deserialize, Serialize};

/// Which engine runs the sandboxes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// The local Docker engine (default).
    #[default]
    Docker,
    /// Pods on a Kubernetes cluster (`[sandbox.kubernetes]`).
    Kubernetes,
}

/// How the host finds the API server.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Connection {
    /// The in-cluster service account when running in a pod, else
    /// `$KUBECONFIG` or `~/.kube/config` (default).
    #[default]
    Infer,
    /// The pod's service account only (fails outside a cluster).
    InCluster,
    /// The kubeconfig file `kubeconfig` names.
    Kubeconfig,
}

/// `[sandbox.kubernetes]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct KubernetesSettings {
    /// The namespace the sandbox pods run in. Warden creates it (with the
    /// `restricted` pod security level) unless `manage-namespace` is off,
    /// and puts a default-deny NetworkPolicy, a ResourceQuota and a
    /// LimitRange in it before any pod.
    pub namespace: String,
    /// Create the namespace when missing (needs cluster-scoped RBAC on
    /// namespaces). Off: an administrator created it (see `deploy/`).
    pub manage_namespace: bool,
    /// `infer` (default), `in-cluster` or `kubeconfig`.
    pub connection: Connection,
    /// The kubeconfig file, with `connection = "kubeconfig"`.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context; its current context when unset.
    pub context: Option<String>,
    /// `runtimeClassName` of every sandbox pod (`gvisor`, `kata`); unset:
    /// the cluster's default runtime (runc), a shared kernel.
    pub runtime_class: Option<String>,
    /// Registry path the sandbox images were pushed to: a pod's image is
    /// `<image-repository>/<image tag>`. Unset: the bare tag (a cluster
    /// whose nodes have the images loaded, such as kind or k3s imports).
    pub image_repository: Option<String>,
    /// `imagePullPolicy` of the sandbox containers.
    pub image_pull_policy: PullPolicy,
    /// Size of each granted workspace directory, in MiB (host
    /// directories are never mounted into cluster pods).
    pub workspace_mb: u64,
    /// `per-pod` (default): each granted directory is an `emptyDir` of
    /// the pod, gone with it. `per-agent`: a PersistentVolumeClaim per
    /// agent and directory, mounted by every pod of that agent (all
    /// images, per-call pods too) and kept across pods and restarts, so
    /// files one tool writes reach the next (a screenshot to
    /// `browser_diff`, a clone to the terminal).
    pub workspaces: WorkspaceScope,
    /// `storageClassName` of the workspace claims; unset: the cluster's
    /// default class.
    pub workspace_storage_class: Option<String>,
    /// Access mode of the workspace claims: `ReadWriteOnce` (default;
    /// an agent's pods are then scheduled onto one node) or
    /// `ReadWriteMany` (a class that offers it, such as NFS or CephFS).
    pub workspace_access_mode: AccessMode,
    /// Seconds a pod may live at all (`activeDeadlineSeconds`): the
    /// backstop that ends pods a dead host left behind.
    pub active_deadline_secs: u64,
    /// Seconds to wait for a new pod to run before its call fails.
    pub startup_timeout_secs: u64,
    /// ResourceQuota of the namespace: pods at most.
    pub quota_pods: u32,
    /// ResourceQuota: CPU limits summed over all pods, in thousandths.
    pub quota_cpu_millis: u64,
    /// ResourceQuota: memory limits summed over all pods, in MiB.
    pub quota_memory_mb: u64,
    /// ResourceQuota: PersistentVolumeClaims (workspaces) at most.
    pub quota_claims: u32,
    /// ResourceQuota: storage the claims request, summed, in MiB.
    pub quota_storage_mb: u64,
    /// Node labels sandbox pods are pinned to, each `key=value` (a node
    /// pool with the runtime class installed).
    pub node_selector: Vec<String>,
}

/// Where a granted directory of a pod lives.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum WorkspaceScope {
    /// An `emptyDir` of the pod.
    #[default]
    PerPod,
    /// A PersistentVolumeClaim of the agent, shared by its pods.
    PerAgent,
}

/// A PersistentVolumeClaim's access mode.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum AccessMode {
    #[default]
    ReadWriteOnce,
    ReadWriteMany,
}

impl AccessMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::ReadWriteOnce => "ReadWriteOnce",
            AccessMode::ReadWriteMany => "ReadWriteMany",
        }
    }
}

/// `imagePullPolicy`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum PullPolicy {
    #[default]
    IfNotPresent,
    Always,
    Never,
}

impl PullPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Always => "Always",
            PullPolicy::Never => "Never",
        }
    }
}

impl Default for KubernetesSettings {
    fn default() -> Self {
        KubernetesSettings {
            namespace: "warden-sandboxes".into(),
            manage_namespace: true,
            connection: Connection::Infer,
            kubeconfig: None,
            context: None,
            runtime_class: None,
            image_repository: None,
            image_pull_policy: PullPolicy::IfNotPresent,
            workspace_mb: 1024,
            workspaces: WorkspaceScope::PerPod,
            workspace_storage_class: None,
            workspace_access_mode: AccessMode::ReadWriteOnce,
            active_deadline_secs: 4 * 3600,
            startup_timeout_secs: 120,
            quota_pods: 20,
            quota_cpu_millis: 8000,
            quota_memory_mb: 8192,
            quota_claims: 20,
            quota_storage_mb: 32 * 1024,
            node_selector: Vec::new(),
        }
    }
}

/// A `[sandbox.kubernetes]` value that cannot work: the key and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub key: &'static str,
    pub reason: String,
}

impl KubernetesSettings {
    /// Checks every value a cluster would reject (or that would make a
    /// weaker sandbox than asked), naming the key.
    pub fn validate(&self) -> Result<(), Invalid> {
        let bad = |key, reason: String| Err(Invalid { key, reason });
        if !is_dns_label(&self.namespace) {
            return bad(
                "namespace",
                format!(
                    "`{}` is not a namespace name (lowercase letters, digits and `-`, at most 63)",
                    self.namespace
                ),
            );
        }
        if let Some(rc) = &self.runtime_class
            && !is_dns_subdomain(rc)
        {
            return bad(
                "runtime-class",
                format!("`{rc}` is not a RuntimeClass name"),
            );
        }
        match (&self.connection, &self.kubeconfig) {
            (Connection::Kubeconfig, None) => {
                return bad(
                    "kubeconfig",
                    "`connection = \"kubeconfig\"` needs the file's path".into(),
                );
            }
            (Connection::InCluster, Some(_)) => {
                return bad(
                    "kubeconfig",
                    "set with `connection = \"in-cluster\"`, which never reads it".into(),
                );
            }
            _ => {}
        }
        if let Some(class) = &self.workspace_storage_class
            && !is_dns_subdomain(class)
        {
            return bad(
                "workspace-storage-class",
                format!("`{class}` is not a StorageClass name"),
            );
        }
        if self.workspaces == WorkspaceScope::PerAgent
            && (self.quota_claims == 0 || self.quota_storage_mb < self.workspace_mb)
        {
            return bad(
                "quota-claims",
                "`workspaces = \"per-agent\"` needs a quota (`quota-claims`, `quota-storage-mb`) \
                 that allows one claim of `workspace-mb`"
                    .into(),
            );
        }
        if let Some(repo) = &self.image_repository
            && (repo.is_empty() || repo.ends_with('/') || repo.contains(char::is_whitespace))
        {
            return bad(
                "image-repository",
                format!("`{repo}` is not an image repository (`host/path`, no trailing `/`)"),
            );
        }
        if self.active_deadline_secs == 0 {
            return bad(
                "active-deadline-secs",
                "must be at least 1: a pod without a deadline outlives a dead host".into(),
            );
        }
        if self.startup_timeout_secs == 0 {
            return bad("startup-timeout-secs", "must be at least 1".into());
        }
        if self.quota_pods == 0 || self.quota_cpu_millis == 0 || self.quota_memory_mb == 0 {
            return bad(
                "quota-pods",
                "the quota (`quota-pods`, `quota-cpu-millis`, `quota-memory-mb`) must allow one pod"
                    .into(),
            );
        }
        for entry in &self.node_selector {
            let ok = entry
                .split_once('=')
                .is_some_and(|(k, v)| !k.is_empty() && is_label_value(v));
            if !ok {
                return bad("node-selector", format!("`{entry}` is not `key=value`"));
            }
        }
        Ok(())
    }
}

/// An RFC 1123 label: what namespaces and pod names must be.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// A label value Kubernetes accepts.
pub fn is_label_value(s: &str) -> bool {
    s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
        && s.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
}
