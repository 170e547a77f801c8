//! The Kubernetes backend against a fake API server on loopback (kube's
//! real client over real HTTP and WebSocket): golden manifests, the
//! namespace fenced before any pod, cleanup by label, quota refusals as
//! tool errors, reconciliation after a restart. `cluster.rs` runs against
//! a real cluster when `WARDEN_TEST_KUBECONFIG` is set.

mod cluster;
mod fake;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use warden_api::net::Cidr;
use warden_api::{CallContext, Clock, FsAccess, FsGrant, Grants};

use super::manifests::{self, PodInput};
use super::*;
use crate::spec::{EgressRule, Network};
use fake::{Fake, Seen, status};

const NS: &str = "warden-sandboxes";

fn config() -> SandboxConfig {
    SandboxConfig {
        backend: BackendKind::Kubernetes,
        kubernetes: KubernetesSettings {
            runtime_class: Some("gvisor".into()),
            image_repository: Some("images.invalid/warden".into()),
            startup_timeout_secs: 5,
            ..KubernetesSettings::default()
        },
        instance: "0123456789abcdef".into(),
        ..SandboxConfig::default()
    }
}

struct TestClock(AtomicU64);

impl Clock for TestClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

async fn start(fake: &Fake, config: SandboxConfig) -> Arc<KubeSandbox> {
    start_with(fake, config, Arc::new(warden_api::SystemClock)).await
}

async fn start_with(fake: &Fake, config: SandboxConfig, clock: Arc<dyn Clock>) -> Arc<KubeSandbox> {
    let url = fake.url.parse().unwrap();
    let cluster = Cluster::with_config(kube::Config::new(url), NS).unwrap();
    KubeSandbox::start_on(cluster, config, clock).await.unwrap()
}

fn ctx(agent: &str, task: Option<&str>) -> CallContext {
    CallContext {
        principal: None,
        agent: agent.into(),
        session: "s1".into(),
        task: task.map(Into::into),
        request_id: "r1".into(),
    }
}

fn grants(net: &[&str]) -> Grants {
    Grants {
        fs: vec![FsGrant {
            host_path: "/srv/ws".into(),
            guest_path: "/workspace".into(),
            access: FsAccess::ReadWrite,
        }],
        net: net.iter().map(|n| n.parse().unwrap()).collect(),
        ..Grants::default()
    }
}

fn request<'a>(context: &'a CallContext, grants: &'a Grants, argv: &[&str]) -> RunRequest<'a> {
    RunRequest {
        kind: ImageKind::Base,
        context,
        grants,
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        stdin: None,
        working_dir: None,
        timeout: Duration::from_secs(10),
        max_output: None,
        paths: None,
        own_container: false,
        scratch_mb: None,
        read_only: false,
    }
}

fn position(log: &[Seen], method: &str, resource: &str, name: Option<&str>) -> usize {
    log.iter()
        .position(|s| {
            s.method == method && s.resource == resource && name.is_none_or(|n| s.name == n)
        })
        .unwrap_or_else(|| panic!("no {method} {resource} {name:?} in {log:#?}"))
}

/// Compares `value` with `golden/<file>` (rewritten with `WARDEN_BLESS=1`),
/// after checking that the typed Kubernetes object keeps every field (an
/// unknown or misspelt field would silently vanish on the way out).
fn golden<T: serde::de::DeserializeOwned + serde::Serialize>(file: &str, value: &Value) {
    let typed: T = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(
        &serde_json::to_value(&typed).unwrap(),
        value,
        "{file}: a field is not part of the Kubernetes type"
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/kubernetes/golden")
        .join(file);
    let text = serde_json::to_string_pretty(value).unwrap() + "\n";
    if std::env::var_os("WARDEN_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with WARDEN_BLESS=1 to write it)",
            path.display()
        )
    }))
    .unwrap();
    assert_eq!(value, &want, "{file} differs from the golden file");
}

#[test]
fn manifests_match_the_golden_files() {
    use k8s_openapi::api::core::v1::{LimitRange, Namespace, Pod, ResourceQuota};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    let c = config();
    let k = &c.kubernetes;
    golden::<Namespace>("namespace.json", &manifests::namespace(k, &c.instance));
    golden::<NetworkPolicy>("deny-all.json", &manifests::deny_all(k, &c.instance));
    golden::<ResourceQuota>("quota.json", &manifests::quota(k, &c.instance));
    golden::<LimitRange>(
        "limit-range.json",
        &manifests::limit_range(k, &c, &c.instance),
    );
    let labels = BTreeMap::from([
        ("warden.managed".to_owned(), "true".to_owned()),
        ("warden.pod".to_owned(), "warden-base-1-0".to_owned()),
    ]);
    let ip: IpAddr = "93.184.216.34".parse().unwrap();
    let net = Network::Allowlist(vec![
        EgressRule {
            net: Cidr {
                addr: ip,
                prefix: 32,
            },
            port: Some(443),
        },
        EgressRule {
            net: Cidr {
                addr: "10.1.0.0".parse().unwrap(),
                prefix: 16,
            },
            port: None,
        },
    ]);
    let egress = manifests::egress(k, "warden-base-1-0", &net, &labels).unwrap();
    golden::<NetworkPolicy>("egress.json", &egress);
    let mut pod = manifests::pod(
        k,
        &c,
        &PodInput {
            name: "warden-base-1-0",
            kind: ImageKind::Base,
            labels: &labels,
            annotations: &BTreeMap::from([("warden.owner.agent".to_owned(), "alice".to_owned())]),
            workspaces: &[manifests::Workspace {
                guest: "/workspace".to_owned(),
                writable: true,
                claim: None,
            }],
            pins: &[("api.example.com".to_owned(), ip)],
            tmpfs_mb: 64,
            memory_mb: 512,
        },
    );
    // The recipe digest in the tag changes with the image recipe.
    let image = pod["spec"]["containers"][0]["image"].as_str().unwrap();
    let (repo, _digest) = image.split_once(':').unwrap();
    assert_eq!(repo, "images.invalid/warden/warden-sandbox-base");
    pod["spec"]["containers"][0]["image"] = json!(format!("{repo}:DIGEST"));
    golden::<Pod>("pod.json", &pod);

    // Workspaces per agent: the agent's claim, and its pods kept on the
    // node that mounts it.
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let per_agent = KubernetesSettings {
        workspaces: WorkspaceScope::PerAgent,
        workspace_storage_class: Some("fast-rwo".into()),
        ..k.clone()
    };
    golden::<PersistentVolumeClaim>(
        "claim.json",
        &manifests::claim(&per_agent, "deployment-1", "alice", "/workspace"),
    );
    let mut labels = labels.clone();
    labels.insert(
        manifests::AGENT_WORKSPACE_LABEL.into(),
        manifests::agent_workspace_label("deployment-1", "alice"),
    );
    let annotations = BTreeMap::from([("warden.owner.agent".to_owned(), "alice".to_owned())]);
    let workspaces = [manifests::Workspace {
        guest: "/workspace".to_owned(),
        writable: true,
        claim: Some(manifests::claim_name("deployment-1", "alice", "/workspace")),
    }];
    let input = PodInput {
        name: "warden-base-1-1",
        kind: ImageKind::Base,
        labels: &labels,
        annotations: &annotations,
        workspaces: &workspaces,
        pins: &[],
        tmpfs_mb: 64,
        memory_mb: 512,
    };
    let mut pod = manifests::pod(&per_agent, &c, &input);
    pod["spec"]["containers"][0]["image"] = json!("DIGEST");
    golden::<Pod>("pod-per-agent.json", &pod);
    // A claim every node may mount: no affinity.
    let shared = KubernetesSettings {
        workspace_access_mode: AccessMode::ReadWriteMany,
        ..per_agent
    };
    assert!(
        manifests::pod(&shared, &c, &input)["spec"]
            .get("affinity")
            .is_none()
    );
}

/// With workspaces per agent, every pod of one agent (any image, a
/// per-call pod too) mounts the same claim, made once before its first
/// pod and kept after the pods go; another agent gets its own; a claim of
/// that name found with another owner is refused, never mounted.
#[tokio::test]
async fn an_agents_pods_share_its_workspace_claims_and_no_one_elses() {
    let fake = Fake::start().await;
    let mut c = config();
    c.kubernetes.workspaces = WorkspaceScope::PerAgent;
    c.deployment = "deployment-1".into();
    let sandbox = start(&fake, c.clone()).await;
    let (alice, bob, g) = (ctx("alice", None), ctx("bob", None), grants(&[]));
    let mut claims = Vec::new();
    for (context, kind, own) in [
        (&alice, ImageKind::Base, false),
        (&alice, ImageKind::Browser, false),
        (&alice, ImageKind::Git, true),
        (&bob, ImageKind::Base, false),
    ] {
        let mut r = request(context, &g, &["true"]);
        r.kind = kind;
        r.own_container = own;
        let before = fake.state().log.len();
        let out = sandbox.run(r).await.unwrap();
        let pod = fake.object("pods", &out.container);
        let seen = fake.state().log[before..].to_vec();
        let at = |resource: &str| {
            seen.iter()
                .position(|s| s.method == "POST" && s.resource == resource)
        };
        if let Some(claim) = at("persistentvolumeclaims") {
            assert!(
                claim < at("pods").unwrap(),
                "the claim exists before the pod"
            );
        }
        // A per-call pod is gone already; the pooled ones are kept.
        if let Some(pod) = pod {
            let volume = &pod["spec"]["volumes"][1]["persistentVolumeClaim"];
            assert_eq!(volume["readOnly"], false);
            claims.push(volume["claimName"].as_str().unwrap().to_owned());
            assert_eq!(
                pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                    [0]["labelSelector"]["matchLabels"][manifests::AGENT_WORKSPACE_LABEL],
                pod["metadata"]["labels"][manifests::AGENT_WORKSPACE_LABEL]
            );
        }
    }
    let alice_claim = manifests::claim_name("deployment-1", "alice", "/workspace");
    let bob_claim = manifests::claim_name("deployment-1", "bob", "/workspace");
    assert_eq!(
        claims,
        [alice_claim.clone(), alice_claim.clone(), bob_claim.clone()]
    );
    let posted = fake
        .state()
        .log
        .iter()
        .filter(|s| s.method == "POST" && s.resource == "persistentvolumeclaims")
        .count();
    assert_eq!(posted, 2, "one claim per agent, made once");
    let stored = fake.object("persistentvolumeclaims", &alice_claim).unwrap();
    assert_eq!(
        stored["metadata"]["annotations"]["warden.owner.agent"],
        "alice"
    );
    sandbox.shutdown().await;
    assert!(
        fake.object("persistentvolumeclaims", &alice_claim)
            .is_some(),
        "the agent's files outlive its pods and the host"
    );

    // A new host of the same deployment finds alice's claim and mounts it.
    let again = start(&fake, c.clone()).await;
    let out = again.run(request(&alice, &g, &["true"])).await.unwrap();
    let pod = fake.object("pods", &out.container).unwrap();
    assert_eq!(
        pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"],
        alice_claim.as_str()
    );
    again.shutdown().await;

    // A claim under carol's name that holds someone else's files.
    let carol_claim = manifests::claim_name("deployment-1", "carol", "/workspace");
    let mut forged = manifests::claim(&c.kubernetes, "deployment-1", "mallory", "/workspace");
    forged["metadata"]["name"] = json!(carol_claim);
    fake.seed("persistentvolumeclaims", NS, forged);
    let third = start(&fake, c).await;
    let carol = ctx("carol", None);
    let pods = |fake: &Fake| {
        fake.state()
            .log
            .iter()
            .filter(|s| s.method == "POST" && s.resource == "pods")
            .count()
    };
    let before = pods(&fake);
    let refused = third.run(request(&carol, &g, &["true"])).await.unwrap_err();
    assert!(refused.to_string().contains("another owner"), "{refused}");
    assert_eq!(pods(&fake), before, "no pod mounts it");
    third.shutdown().await;
}

#[test]
fn every_pod_carries_the_isolation_guarantees() {
    let mut c = config();
    c.kubernetes.runtime_class = None;
    let pod = manifests::pod(
        &c.kubernetes,
        &c,
        &PodInput {
            name: "p",
            kind: ImageKind::Browser,
            labels: &BTreeMap::new(),
            annotations: &BTreeMap::new(),
            workspaces: &[],
            pins: &[],
            tmpfs_mb: 64,
            memory_mb: 512,
        },
    );
    let spec = &pod["spec"];
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["enableServiceLinks"], false);
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["activeDeadlineSeconds"], 4 * 3600);
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert!(
        spec.get("runtimeClassName").is_none(),
        "unset: the cluster's default"
    );
    let container = &spec["containers"][0];
    let sc = &container["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["privileged"], false);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(container["resources"]["limits"]["memory"], "512Mi");
    assert!(spec.get("hostAliases").is_none());
    // No host directory is ever mounted.
    assert!(
        spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.get("hostPath").is_none())
    );
    // No network grant: no policy of its own, the namespace's deny-all rules.
    assert!(manifests::egress(&c.kubernetes, "p", &Network::None, &BTreeMap::new()).is_none());
}

#[test]
fn allow_all_never_reaches_the_cluster_or_metadata_ranges() {
    let c = config();
    let policy = manifests::egress(
        &c.kubernetes,
        "p",
        &Network::Public(Vec::new()),
        &BTreeMap::new(),
    )
    .unwrap();
    let v4 = &policy["spec"]["egress"][0]["to"][0]["ipBlock"];
    assert_eq!(v4["cidr"], "0.0.0.0/0");
    for blocked in [
        "10.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
    ] {
        assert!(
            v4["except"].as_array().unwrap().contains(&json!(blocked)),
            "{blocked}"
        );
    }
}

#[tokio::test]
async fn the_namespace_is_fenced_before_any_pod_and_egress_before_its_pod() {
    let fake = Fake::start().await;
    let sandbox = start(&fake, config()).await;
    let (context, grants) = (ctx("alice", None), grants(&["10.1.2.3:443"]));
    let out = sandbox
        .run(request(&context, &grants, &["sh", "-c", "echo hi"]))
        .await
        .unwrap();
    assert!(out.cold);
    let log = fake.state().log.clone();
    let pod = position(&log, "POST", "pods", None);
    let ns = position(&log, "PATCH", "namespaces", Some(NS));
    let deny = position(&log, "PATCH", "networkpolicies", Some(manifests::DENY_ALL));
    let quota = position(&log, "PATCH", "resourcequotas", Some(manifests::QUOTA));
    let limits = position(&log, "PATCH", "limitranges", Some(manifests::LIMITS));
    let egress = position(
        &log,
        "PATCH",
        "networkpolicies",
        Some(&format!("{}-egress", out.container)),
    );
    assert!(ns < deny && deny < quota && quota < limits && limits < egress && egress < pod);
    let policy = fake
        .object("networkpolicies", &format!("{}-egress", out.container))
        .unwrap();
    assert_eq!(
        policy["spec"]["egress"],
        json!([{"to": [{"ipBlock": {"cidr": "10.1.2.3/32"}}], "ports": [{"protocol": "TCP", "port": 443}]}])
    );
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["warden.pod"],
        out.container.as_str()
    );
    let stored = fake.object("pods", &out.container).unwrap();
    assert_eq!(
        stored["metadata"]["labels"]["warden.pod"],
        out.container.as_str()
    );
    assert_eq!(
        stored["metadata"]["annotations"]["warden.owner.agent"],
        "alice"
    );
    assert_eq!(stored["spec"]["runtimeClassName"], "gvisor");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn commands_run_over_exec_with_the_call_ids_and_exit_codes() {
    let fake = Fake::start().await;
    fake.exec_reply(Arc::new(|argv: &[String]| {
        let last = argv.last().cloned().unwrap_or_default();
        (last.into_bytes(), b"warn".to_vec(), 3)
    }));
    let sandbox = start(&fake, config()).await;
    let (context, grants) = (ctx("alice", Some("t1")), grants(&[]));
    let mut req = request(&context, &grants, &["sh", "-c", "exit 3"]);
    req.working_dir = Some("/workspace/sub".into());
    let first = sandbox.run(req).await.unwrap();
    assert_eq!(first.output.exit_code, Some(3));
    assert_eq!(first.output.stdout, b"exit 3");
    assert_eq!(first.output.stderr, b"warn");
    let argv = fake.state().execs[0].clone();
    assert_eq!(
        argv,
        [
            "env",
            "-C",
            "/workspace/sub",
            "--",
            "WARDEN_AGENT_ID=alice",
            "WARDEN_SESSION_ID=s1",
            "WARDEN_TASK_ID=t1",
            "WARDEN_REQUEST_ID=r1",
            "sh",
            "-c",
            "exit 3"
        ]
    );
    // Per-agent: the second call reuses the warm pod. Output past the
    // cap is counted, not kept.
    let mut req = request(&context, &grants, &["echo", "0123456789"]);
    req.max_output = Some(4);
    let second = sandbox.run(req).await.unwrap();
    assert_eq!(second.output.stdout, b"0123");
    assert_eq!(second.output.stdout_total, 10);
    assert!(second.output.truncated());
    assert!(!second.cold);
    assert_eq!(second.container, first.container);
    assert_eq!(fake.names("pods").len(), 1);
    // No network grant: the pod has no policy of its own.
    assert_eq!(fake.names("networkpolicies"), [manifests::DENY_ALL]);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn pods_are_removed_by_task_by_grace_period_and_by_label_at_shutdown() {
    let fake = Fake::start().await;
    let foreign = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "someone-else", "namespace": NS,
        "labels": {"warden.managed": "true", "warden.instance": "another"}}});
    fake.seed("pods", NS, foreign);
    let clock = Arc::new(TestClock(AtomicU64::new(1_000)));
    let config = SandboxConfig {
        strategy: Strategy::PerTask,
        ..config()
    };
    let sandbox = start_with(&fake, config, clock.clone()).await;
    let g = grants(&["10.9.9.9:22"]);
    let (t1, t2, t3) = (
        ctx("a", Some("t1")),
        ctx("a", Some("t2")),
        ctx("b", Some("t3")),
    );
    let p1 = sandbox
        .run(request(&t1, &g, &["true"]))
        .await
        .unwrap()
        .container;
    let p2 = sandbox
        .run(request(&t2, &g, &["true"]))
        .await
        .unwrap()
        .container;
    let p3 = sandbox
        .run(request(&t3, &g, &["true"]))
        .await
        .unwrap()
        .container;
    assert_eq!(fake.names("pods").len(), 4);

    sandbox.end_task("t1").await;
    let pods = fake.names("pods");
    assert!(!pods.contains(&p1) && pods.contains(&p2));
    assert!(
        fake.object("networkpolicies", &format!("{p1}-egress"))
            .is_none()
    );

    clock.0.store(1_000 + 30_000, Ordering::SeqCst);
    let reaped = sandbox.reap().await;
    assert_eq!(reaped.len(), 2, "both idle past the grace period");
    assert!(fake.names("pods") == ["someone-else"]);

    let p4 = sandbox
        .run(request(&t3, &g, &["true"]))
        .await
        .unwrap()
        .container;
    assert_ne!(p4, p3);
    sandbox.shutdown().await;
    assert_eq!(
        fake.names("pods"),
        ["someone-else"],
        "another instance's pod stays"
    );
    assert_eq!(fake.names("networkpolicies"), [manifests::DENY_ALL]);
    let after = sandbox.run(request(&t3, &g, &["true"])).await;
    assert!(matches!(after, Err(SandboxError::ShuttingDown)));
}

#[tokio::test]
async fn a_restarted_host_removes_its_orphans_and_nothing_else() {
    let fake = Fake::start().await;
    let me = crate::reconcile::this_host();
    let host = host_name();
    let pod = |name: &str, instance: &str, host: &str, pid: u32, start: u64| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS,
            "labels": {"warden.managed": "true", "warden.instance": instance,
                "warden.host.name": host, "warden.host.pid": pid.to_string(),
                "warden.host.start": start.to_string(), "warden.pod": name}}})
    };
    let inst = config().instance;
    // The previous run of this replica: a pid that no longer runs.
    fake.seed("pods", NS, pod("orphan", &inst, &host, u32::MAX - 1, 5));
    fake.seed("pods", NS, pod("live", &inst, &host, me.pid, me.start));
    fake.seed(
        "pods",
        NS,
        pod("other-replica", &inst, "warden-1", u32::MAX - 1, 5),
    );
    fake.seed(
        "pods",
        NS,
        pod("other-instance", "feedface", &host, u32::MAX - 1, 5),
    );
    let policy = |name: &str, pod: &str| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": NS, "labels": {"warden.managed": "true",
                "warden.instance": inst, "warden.host.name": host, "warden.pod": pod}},
            "spec": {"podSelector": {}}})
    };
    fake.seed("networkpolicies", NS, policy("orphan-egress", "orphan"));
    fake.seed("networkpolicies", NS, policy("live-egress", "live"));
    fake.seed(
        "networkpolicies",
        NS,
        policy("never-made-egress", "never-made"),
    );
    let sandbox = start(&fake, config()).await;
    let mut pods = fake.names("pods");
    pods.sort();
    assert_eq!(pods, ["live", "other-instance", "other-replica"]);
    let mut policies = fake.names("networkpolicies");
    policies.sort();
    assert_eq!(policies, ["live-egress", manifests::DENY_ALL]);
    drop(sandbox);
}

#[tokio::test]
async fn a_full_quota_is_a_tool_error_that_says_what_to_change() {
    let fake = Fake::start().await;
    let message = "pods \"warden-base-x\" is forbidden: exceeded quota: warden-quota, \
                   requested: pods=1, used: pods=20, limited: pods=20";
    fake.state().refuse = Some((
        "POST".into(),
        "pods".into(),
        403,
        status(403, "Forbidden", message),
    ));
    let dir = tempfile::tempdir().unwrap();
    let mut config = config();
    config.kubernetes.connection = Connection::Kubeconfig;
    config.kubernetes.kubeconfig = Some(fake.kubeconfig(dir.path()));
    let tools = crate::SandboxTools::new(config).unwrap();
    let spec = warden_api::Backend::tools(&tools)
        .into_iter()
        .find(|t| t.name.as_str() == "terminal_exec")
        .unwrap();
    let (context, grants) = (ctx("alice", None), grants(&["10.1.2.3:443"]));
    let args = json!({"command": "echo hi"});
    let envelope = warden_api::Backend::invoke(
        &tools,
        warden_api::BackendCall {
            tool: &spec,
            args: &args,
            context: &context,
            grants: &grants,
            limits: warden_api::CallLimits::DEFAULT,
            events: None,
            paths: None,
            cwd: None,
            remote: None,
        },
    )
    .await;
    let v = serde_json::to_value(&envelope).unwrap();
    assert_eq!(v["status"], "error", "{v}");
    assert_eq!(v["domain_code"], "quota_exceeded", "{v}");
    let text = v["message"].as_str().unwrap();
    assert!(text.contains("exceeded quota: warden-quota"), "{text}");
    assert!(text.contains(NS) && text.contains("quota-pods"), "{text}");
    // The pod's egress policy went with the refused pod.
    assert_eq!(fake.names("networkpolicies"), [manifests::DENY_ALL]);
    tools.shutdown().await;
}

#[tokio::test]
async fn a_pod_that_cannot_pull_its_image_fails_at_once_and_is_removed() {
    let fake = Fake::start().await;
    fake.state().pod_status = Some(json!({"phase": "Pending", "containerStatuses": [{
        "name": "sandbox", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff", "message": "back-off pulling image"}}}]}));
    let sandbox = start(&fake, config()).await;
    let (context, grants) = (ctx("alice", None), grants(&["10.1.2.3:443"]));
    let started = std::time::Instant::now();
    let e = sandbox
        .run(request(&context, &grants, &["true"]))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "not the startup timeout"
    );
    let text = e.to_string();
    assert!(matches!(e, SandboxError::PodStart { .. }), "{text}");
    assert!(
        text.contains("ImagePullBackOff") && text.contains("image-repository"),
        "{text}"
    );
    assert!(fake.names("pods").is_empty(), "the pod was deleted");
    assert_eq!(fake.names("networkpolicies"), [manifests::DENY_ALL]);
}

#[test]
fn config_errors_name_the_key() {
    let parse = |text: &str| -> SandboxConfig { toml::from_str(text).unwrap() };
    let c = parse("backend = \"kubernetes\"\n[kubernetes]\nnamespace = \"Bad_Name\"\n");
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("sandbox.kubernetes.namespace") && e.contains("Bad_Name"),
        "{e}"
    );

    let c = parse("backend = \"kubernetes\"\n[kubernetes]\nconnection = \"kubeconfig\"\n");
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("sandbox.kubernetes.kubeconfig"), "{e}");

    let c = parse("backend = \"kubernetes\"\n[kubernetes]\nactive-deadline-secs = 0\n");
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("active-deadline-secs")
    );

    let c = parse("backend = \"kubernetes\"\n[kubernetes]\nnode-selector = [\"pool\"]\n");
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("node-selector")
    );

    let c = parse(
        "backend = \"kubernetes\"\n[kubernetes]\nworkspaces = \"per-agent\"\nquota-claims = 0\n",
    );
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("quota-claims")
    );
    let c =
        parse("backend = \"kubernetes\"\n[kubernetes]\nworkspace-storage-class = \"Fast SSD\"\n");
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("workspace-storage-class")
    );
    let c = parse(
        "backend = \"kubernetes\"\n[kubernetes]\nworkspaces = \"per-agent\"\n\
         workspace-access-mode = \"ReadWriteMany\"\nworkspace-storage-class = \"cephfs\"\n",
    );
    assert!(c.validate().is_ok());
    assert_eq!(c.kubernetes.workspaces, WorkspaceScope::PerAgent);
    assert_eq!(
        c.kubernetes.workspace_access_mode,
        AccessMode::ReadWriteMany
    );

    // The Docker backend never reads the table.
    let c = parse("[kubernetes]\nnamespace = \"Bad_Name\"\n");
    assert!(c.validate().is_ok());

    let c = parse(
        "backend = \"kubernetes\"\n[kubernetes]\nnamespace = \"agents\"\nruntime-class = \"kata\"\n\
         connection = \"in-cluster\"\nimage-pull-policy = \"Always\"\n",
    );
    assert!(c.validate().is_ok());
    assert_eq!(c.kubernetes.runtime_class.as_deref(), Some("kata"));

    let unknown: Result<SandboxConfig, _> =
        toml::from_str("backend = \"kubernetes\"\n[kubernetes]\nnamespase = \"x\"\n");
    assert!(unknown.unwrap_err().to_string().contains("namespase"));
    let backend: Result<SandboxConfig, _> = toml::from_str("backend = \"nomad\"\n");
    assert!(backend.is_err(), "an unknown backend fails at load");
}

#[test]
fn host_names_become_label_values() {
    assert_eq!(reconcile::label_safe("warden-0"), "warden-0");
    assert_eq!(reconcile::label_safe("Web Host!"), "Web-Host");
    assert_eq!(reconcile::label_safe("--"), "unnamed");
    assert!(is_label_value(&reconcile::label_safe(&"x".repeat(80))));
    assert!(is_label_value(&host_name()));
}
