//! The Kubernetes objects a sandbox is made of, as pure functions of the
//! call's effective grants and the configuration.
//!
//! Attack: a sandboxed command escaping or overreaching on a cluster —
//! reaching other pods, the cluster's services, the cloud metadata
//! endpoint or the internet without a grant; stealing the pod's
//! service-account token to call the API server; gaining privileges
//! (setuid binaries, capabilities, a privileged or host-namespace pod);
//! starving the cluster (pod floods, memory hogs); or outliving the host
//! that made it. The namespace enforces the `restricted` pod security
//! level and holds a default-deny NetworkPolicy (ingress and egress) that
//! exists before any pod, so a pod is never unfiltered, not even for the
//! moment between its creation and its own egress policy; a pod's egress
//! policy allows only the granted address:port pairs (names pinned in
//! `hostAliases` as the Docker backend pins them in /etc/hosts). A
//! ResourceQuota caps the namespace and a LimitRange gives every
//! container limits. Every pod runs as a non-root user with all
//! capabilities dropped, no privilege escalation, seccomp
//! `RuntimeDefault`, a read-only root filesystem, no service-account
//! token, no service links, `restartPolicy: Never`, the configured
//! `runtimeClassName` (gVisor, Kata), and `activeDeadlineSeconds`, the
//! backstop that ends it when nobody else does. A workspace claim
//! (`workspaces = "per-agent"`) is named by a digest of the installation,
//! the agent and the directory and annotated with them, so no agent's
//! pod mounts another agent's files.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{Value, json};

use super::config::{AccessMode, KubernetesSettings};
use crate::SandboxConfig;
use crate::images::{ImageKind, SANDBOX_UID};
use crate::spec::{EgressRule, Network};

/// Label naming the pod an egress policy belongs to (and the pod itself).
pub const POD_LABEL: &str = "warden.pod";
/// Label naming the replica (host name) whose process made the pod.
pub const HOST_NAME_LABEL: &str = "warden.host.name";
/// Annotations keep owner ids that are not valid label values.
pub const AGENT_ANNOTATION: &str = "warden.owner.agent";
pub const TASK_ANNOTATION: &str = "warden.owner.task";
/// The namespace-wide default-deny NetworkPolicy.
pub const DENY_ALL: &str = "warden-deny-all";
pub const QUOTA: &str = "warden-quota";
pub const LIMITS: &str = "warden-limits";
/// The one container of a sandbox pod.
pub const CONTAINER: &str = "sandbox";
/// Label of an agent's pods and claims when workspaces are per agent: a
/// digest of the installation and the agent (agent ids need not be
/// label values), which keeps an agent's pods on one node.
pub const AGENT_WORKSPACE_LABEL: &str = "warden.workspace.agent";
/// Label of a workspace claim: the deployment whose agent it serves.
pub const DEPLOYMENT_LABEL: &str = "warden.deployment";
/// Annotation naming the directory a workspace claim holds.
pub const WORKSPACE_ANNOTATION: &str = "warden.workspace.path";

/// Non-public IPv4 and IPv6 ranges a pod under `insecure:allow-all`
/// still never reaches: the cluster's own networks, loopback, link-local
/// (the metadata endpoint), CGNAT.
const NON_PUBLIC_V4: &[&str] = &[
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "169.254.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "0.0.0.0/8",
];
const NON_PUBLIC_V6: &[&str] = &["fc00::/7", "fe80::/10", "::1/128", "::ffff:0:0/96"];

/// The labels every object Warden makes in the namespace carries.
pub fn base_labels(instance: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (crate::spec::MANAGED_LABEL.to_owned(), "true".to_owned()),
        (crate::spec::INSTANCE_LABEL.to_owned(), instance.to_owned()),
    ])
}

/// The sandbox namespace, at the `restricted` pod security level.
pub fn namespace(k: &KubernetesSettings, instance: &str) -> Value {
    let mut labels = base_labels(instance);
    for mode in ["enforce", "audit", "warn"] {
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            "restricted".into(),
        );
    }
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": { "name": k.namespace, "labels": labels },
    })
}

/// Denies all ingress and egress of every pod in the namespace: what a
/// pod gets unless a policy of its own allows more.
pub fn deny_all(k: &KubernetesSettings, instance: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": DENY_ALL, "namespace": k.namespace, "labels": base_labels(instance) },
        "spec": { "podSelector": {}, "policyTypes": ["Ingress", "Egress"] },
    })
}

/// Caps the namespace: pods, CPU and memory summed over all of them.
pub fn quota(k: &KubernetesSettings, instance: &str) -> Value {
    let cpu = format!("{}m", k.quota_cpu_millis);
    let memory = format!("{}Mi", k.quota_memory_mb);
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": { "name": QUOTA, "namespace": k.namespace, "labels": base_labels(instance) },
        "spec": { "hard": {
            "pods": k.quota_pods.to_string(),
            "requests.cpu": cpu, "limits.cpu": cpu,
            "requests.memory": memory, "limits.memory": memory,
            "persistentvolumeclaims": k.quota_claims.to_string(),
            "requests.storage": format!("{}Mi", k.quota_storage_mb),
        } },
    })
}

/// Gives every container limits (and caps what one may ask for), so no
/// pod in the namespace runs unbounded, whoever made it.
pub fn limit_range(k: &KubernetesSettings, config: &SandboxConfig, instance: &str) -> Value {
    let cpu = format!("{}m", config.cpu_millis);
    let memory = format!("{}Mi", config.memory_mb);
    // A git operation's scratch space is tmpfs, counted as memory.
    let max_memory = format!("{}Mi", config.memory_mb.saturating_add(config.git.quota_mb));
    json!({
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": { "name": LIMITS, "namespace": k.namespace, "labels": base_labels(instance) },
        "spec": { "limits": [{
            "type": "Container",
            "default": { "cpu": cpu, "memory": memory },
            "defaultRequest": { "cpu": cpu, "memory": memory },
            "max": { "cpu": cpu, "memory": max_memory },
        }] },
    })
}

/// The egress policy of one pod, or `None` when its grants allow no
/// network (the namespace's default-deny already says so).
pub fn egress(
    k: &KubernetesSettings,
    pod: &str,
    network: &Network,
    labels: &BTreeMap<String, String>,
) -> Option<Value> {
    let rules: Vec<Value> = match network {
        Network::None | Network::Joined(_) => return None,
        Network::Allowlist(rules) => rules.iter().map(rule).collect(),
        Network::Public(rules) => {
            let public = |cidr: &str, except: &[&str]| json!({ "to": [{ "ipBlock": { "cidr": cidr, "except": except } }] });
            // Names resolve through the cluster's DNS under allow-all.
            let dns = json!({
                "to": [{
                    "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "kube-system" } },
                    "podSelector": { "matchLabels": { "k8s-app": "kube-dns" } },
                }],
                "ports": [{ "protocol": "UDP", "port": 53 }, { "protocol": "TCP", "port": 53 }],
            });
            let mut all = vec![
                public("0.0.0.0/0", NON_PUBLIC_V4),
                public("::/0", NON_PUBLIC_V6),
                dns,
            ];
            all.extend(rules.iter().map(rule));
            all
        }
    };
    Some(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": format!("{pod}-egress"), "namespace": k.namespace, "labels": labels },
        "spec": {
            "podSelector": { "matchLabels": { POD_LABEL: pod } },
            "policyTypes": ["Egress"],
            "egress": rules,
        },
    }))
}

fn rule(r: &EgressRule) -> Value {
    let mut to = json!({ "to": [{ "ipBlock": { "cidr": r.net.to_string() } }] });
    if let Some(port) = r.port {
        to["ports"] = json!([{ "protocol": "TCP", "port": port }]);
    }
    to
}

/// A granted directory of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The path in the pod.
    pub guest: String,
    pub writable: bool,
    /// The agent's PersistentVolumeClaim holding it (`None`: an
    /// `emptyDir` of the pod).
    pub claim: Option<String>,
}

/// The hex digest naming what belongs to `parts` (NUL-separated), cut to
/// `len` digits.
fn digest_of(parts: &[&str], len: usize) -> String {
    let digest = warden_signing::sha256_digest(parts.join("\0").as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    hex[..len.min(hex.len())].to_owned()
}

/// The [`AGENT_WORKSPACE_LABEL`] value of `agent`'s pods and claims.
pub fn agent_workspace_label(deployment: &str, agent: &str) -> String {
    digest_of(&[deployment, agent], 32)
}

/// The name of `agent`'s workspace claim for `guest`.
pub fn claim_name(deployment: &str, agent: &str, guest: &str) -> String {
    format!("warden-ws-{}", digest_of(&[deployment, agent, guest], 40))
}

/// `agent`'s workspace claim for the directory `guest`, of `workspace-mb`,
/// in `deployment` (whose replicas all mount it; no one host's instance
/// owns it).
pub fn claim(k: &KubernetesSettings, deployment: &str, agent: &str, guest: &str) -> Value {
    let labels = BTreeMap::from([
        (crate::spec::MANAGED_LABEL.to_owned(), "true".to_owned()),
        (DEPLOYMENT_LABEL.to_owned(), deployment.to_owned()),
        (
            AGENT_WORKSPACE_LABEL.to_owned(),
            agent_workspace_label(deployment, agent),
        ),
    ]);
    let mut spec = json!({
        "accessModes": [k.workspace_access_mode.as_str()],
        "resources": { "requests": { "storage": format!("{}Mi", k.workspace_mb) } },
    });
    if let Some(class) = &k.workspace_storage_class {
        spec["storageClassName"] = json!(class);
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(deployment, agent, guest),
            "namespace": k.namespace,
            "labels": labels,
            "annotations": { AGENT_ANNOTATION: agent, WORKSPACE_ANNOTATION: guest },
        },
        "spec": spec,
    })
}

/// What [`pod`] needs besides the configuration.
#[derive(Debug, Clone)]
pub struct PodInput<'a> {
    pub name: &'a str,
    pub kind: ImageKind,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
    /// Granted workspaces.
    pub workspaces: &'a [Workspace],
    /// Names from network grants, pinned to the addresses they resolved to.
    pub pins: &'a [(String, IpAddr)],
    /// Size of /tmp in MiB, and the memory limit in MiB.
    pub tmpfs_mb: u64,
    pub memory_mb: u64,
}

/// The sandbox pod: an idle main process the calls exec beside.
pub fn pod(k: &KubernetesSettings, config: &SandboxConfig, input: &PodInput<'_>) -> Value {
    let tag = input.kind.recipe().tag(&config.image_prefix);
    let image = match &k.image_repository {
        Some(repo) => format!("{repo}/{tag}"),
        None => tag,
    };
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, ip) in input.pins {
        aliases
            .entry(ip.to_string())
            .or_default()
            .push(name.clone());
    }
    let aliases: Vec<Value> = aliases
        .into_iter()
        .map(|(ip, hostnames)| json!({ "ip": ip, "hostnames": hostnames }))
        .collect();
    let mut volumes = vec![json!({
        "name": "tmp",
        "emptyDir": { "medium": "Memory", "sizeLimit": format!("{}Mi", input.tmpfs_mb) },
    })];
    let mut mounts = vec![json!({ "name": "tmp", "mountPath": "/tmp" })];
    for (i, w) in input.workspaces.iter().enumerate() {
        let name = format!("workspace-{i}");
        volumes.push(match &w.claim {
            Some(claim) => json!({
                "name": name,
                "persistentVolumeClaim": { "claimName": claim, "readOnly": !w.writable },
            }),
            None => json!({
                "name": name,
                "emptyDir": { "sizeLimit": format!("{}Mi", k.workspace_mb) },
            }),
        });
        mounts.push(json!({ "name": name, "mountPath": w.guest, "readOnly": !w.writable }));
    }
    let working_dir = input
        .workspaces
        .first()
        .map_or_else(|| "/tmp".to_owned(), |w| w.guest.clone());
    let uid = i64::from(SANDBOX_UID);
    let resources = json!({
        "cpu": format!("{}m", config.cpu_millis),
        "memory": format!("{}Mi", input.memory_mb),
    });
    let node_selector: BTreeMap<&str, &str> = k
        .node_selector
        .iter()
        .filter_map(|e| e.split_once('='))
        .collect();
    let mut spec = json!({
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "hostNetwork": false,
        "hostPID": false,
        "hostIPC": false,
        "restartPolicy": "Never",
        "activeDeadlineSeconds": k.active_deadline_secs,
        "terminationGracePeriodSeconds": 1,
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": uid,
            "runAsGroup": uid,
            "fsGroup": uid,
            "seccompProfile": { "type": "RuntimeDefault" },
        },
        "containers": [{
            "name": CONTAINER,
            "image": image,
            "imagePullPolicy": k.image_pull_policy.as_str(),
            "command": ["sleep", "infinity"],
            "workingDir": working_dir,
            "env": [
                { "name": "HOME", "value": "/tmp/home" },
                { "name": "TMPDIR", "value": "/tmp" },
                { "name": "PATH", "value": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" },
                { "name": "LANG", "value": "C.UTF-8" },
            ],
            "resources": { "limits": resources, "requests": resources },
            "securityContext": {
                "privileged": false,
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "runAsNonRoot": true,
                "capabilities": { "drop": ["ALL"] },
                "seccompProfile": { "type": "RuntimeDefault" },
            },
            "volumeMounts": mounts,
        }],
        "volumes": volumes,
    });
    if let Some(rc) = &k.runtime_class {
        spec["runtimeClassName"] = json!(rc);
    }
    if !aliases.is_empty() {
        spec["hostAliases"] = json!(aliases);
    }
    if !node_selector.is_empty() {
        spec["nodeSelector"] = json!(node_selector);
    }
    // A claim one node mounts at a time: the agent's pods go where its
    // first one runs (a pod matching its own term is placed freely).
    if k.workspace_access_mode == AccessMode::ReadWriteOnce
        && input.workspaces.iter().any(|w| w.claim.is_some())
        && let Some(agent) = input.labels.get(AGENT_WORKSPACE_LABEL)
    {
        spec["affinity"] = json!({ "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": { "matchLabels": { AGENT_WORKSPACE_LABEL: agent } },
                "topologyKey": "kubernetes.io/hostname",
            }],
        } });
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": input.name,
            "namespace": k.namespace,
            "labels": input.labels,
            "annotations": input.annotations,
        },
        "spec": spec,
    })
}
