//! Against a real cluster, only when `WARDEN_TEST_KUBECONFIG` names a
//! kubeconfig (skipped with a message otherwise). The cluster needs the
//! sandbox images under `WARDEN_TEST_IMAGE_REPOSITORY` (or loaded on its
//! nodes) and, with `WARDEN_TEST_RUNTIME_CLASS`, that RuntimeClass.
//! The namespace is `WARDEN_TEST_NAMESPACE`, `warden-test` by default.

use super::*;

fn cluster_config() -> Option<SandboxConfig> {
    let Some(kubeconfig) = std::env::var_os("WARDEN_TEST_KUBECONFIG") else {
        eprintln!("skipped: set WARDEN_TEST_KUBECONFIG to run the real-cluster suite");
        return None;
    };
    let mut c = config();
    c.kubernetes = KubernetesSettings {
        namespace: std::env::var("WARDEN_TEST_NAMESPACE").unwrap_or_else(|_| "warden-test".into()),
        connection: Connection::Kubeconfig,
        kubeconfig: Some(kubeconfig.into()),
        runtime_class: std::env::var("WARDEN_TEST_RUNTIME_CLASS").ok(),
        image_repository: std::env::var("WARDEN_TEST_IMAGE_REPOSITORY").ok(),
        startup_timeout_secs: 300,
        ..KubernetesSettings::default()
    };
    c.instance = format!("test{:x}", std::process::id());
    Some(c)
}

#[tokio::test]
async fn a_real_cluster_runs_commands_in_a_locked_down_pod() {
    let Some(config) = cluster_config() else {
        return;
    };
    let sandbox = KubeSandbox::connect(config).await.unwrap();
    let (context, grants) = (ctx("alice", None), grants(&[]));
    let script = "id -u; touch /probe 2>/dev/null && echo rootfs-writable; \
                  test -e /var/run/secrets/kubernetes.io/serviceaccount/token && echo token; \
                  grep CapEff /proc/self/status; echo ok > /workspace/f && cat /workspace/f";
    let out = sandbox
        .run(request(&context, &grants, &["sh", "-c", script]))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.output.stdout).into_owned();
    assert_eq!(out.output.exit_code, Some(0), "{text}");
    assert!(text.starts_with("1000\n"), "non-root: {text}");
    assert!(!text.contains("rootfs-writable"), "{text}");
    assert!(!text.contains("token"), "no service-account token: {text}");
    assert!(text.contains("CapEff:\t0000000000000000"), "{text}");
    assert!(text.trim_end().ends_with("ok"), "{text}");
    // No network grant: the default-deny policy (on a CNI that enforces it).
    let net = sandbox
        .run(request(
            &context,
            &grants,
            &[
                "sh",
                "-c",
                "timeout 5 bash -c 'echo > /dev/tcp/1.1.1.1/443' && echo reached",
            ],
        ))
        .await
        .unwrap();
    assert!(!String::from_utf8_lossy(&net.output.stdout).contains("reached"));
    let pod = out.container.clone();
    sandbox.shutdown().await;
    let left = sandbox
        .cluster()
        .list_pods(&format!("warden.pod={pod}"))
        .await
        .unwrap();
    assert!(left.is_empty(), "removed at shutdown: {left:?}");
}
