//! The sandbox through the `warden` binary against the real Docker
//! engine: a host killed mid-call leaves an orphan that the next host's
//! reconciliation removes, while containers of live hosts are kept; and
//! `warden call` of a sandboxed tool cleans up after itself.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use warden_api::{CallContext, Grants};
use warden_sandbox::images::ImageKind;
use warden_sandbox::spec::AGENT_LABEL;
use warden_sandbox::{Docker, DockerSandbox, RunRequest, Sandbox, SandboxConfig, SharedSandbox};

fn config(dir: &std::path::Path, agent: &str) -> std::path::PathBuf {
    let path = dir.join("warden.toml");
    let text = format!(
        "state-dir = \"{state}\"\n\n[sandbox]\ngrace-period-secs = 600\n\n[agents.{agent}]\nlevel = \"elevated\"\nmode = \"autonomous\"\n",
        state = dir.join("state").display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

async fn docker() -> Docker {
    Docker::connect()
        .await
        .unwrap_or_else(|e| panic!("these tests need a Docker engine (scripts/ensure-docker): {e}"))
}

async fn containers(docker: &Docker, agent: &str) -> Vec<String> {
    docker
        .list_managed(&[(AGENT_LABEL, agent)])
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn orphans_of_a_killed_host_are_reconciled_and_live_hosts_are_kept() {
    let docker = docker().await;
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("orphan-{}", std::process::id());
    let cfg = config(dir.path(), &agent);

    // A live host of ours (this process) with a warm container.
    let live = SharedSandbox(
        DockerSandbox::start(SandboxConfig::default())
            .await
            .unwrap(),
    );
    let live_agent = format!("live-{}", std::process::id());
    let context = CallContext {
        principal: None,
        agent: live_agent.clone(),
        session: "s".into(),
        task: None,
        request_id: "r".into(),
    };
    let grants = Grants::default();
    live.run(RunRequest {
        kind: ImageKind::Base,
        context: &context,
        grants: &grants,
        argv: vec!["true".into()],
        stdin: None,
        working_dir: None,
        timeout: Duration::from_secs(30),
        max_output: None,
        paths: None,
        own_container: false,
        scratch_mb: None,
        read_only: false,
    })
    .await
    .unwrap();

    // A host that is killed while its call runs.
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["call", "terminal_exec", "--config"])
        .arg(&cfg)
        .args(["--agent", &agent, "--args"])
        .arg(json!({"command": "sleep 120", "timeout_secs": 120}).to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while containers(&docker, &agent).await.is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("warden exited early ({status}): {err}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no container appeared"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let orphans = containers(&docker, &agent).await;
    assert_eq!(
        orphans.len(),
        1,
        "the killed host left its container behind"
    );

    // Containers whose owner is gone but that are not this installation's:
    // another instance's (another state directory or machine sharing the
    // engine), and one with Warden's managed label but no instance.
    let foreign_agent = format!("foreign-{}", std::process::id());
    let other = dead_owner_container(&docker, &foreign_agent, Some("another-instance")).await;
    let unlabelled = dead_owner_container(&docker, &foreign_agent, None).await;

    // The next host of this installation (same state directory) reconciles
    // at start: its orphan goes; the live host's, the other instance's and
    // the unlabelled container stay.
    let next = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["call", "terminal_exec", "--config"])
        .arg(&cfg)
        .args(["--agent", &agent, "--args"])
        .arg(json!({"command": "true"}).to_string())
        .output()
        .unwrap();
    assert!(
        next.status.success(),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    assert!(
        !containers(&docker, &agent).await.contains(&orphans[0]),
        "orphan removed"
    );
    assert_eq!(
        containers(&docker, &live_agent).await.len(),
        1,
        "a live host's container is kept"
    );
    let foreign = containers(&docker, &foreign_agent).await;
    assert!(
        foreign.contains(&other) && foreign.contains(&unlabelled),
        "another instance's and an unlabelled container are never removed: {foreign:?}"
    );
    for id in [other, unlabelled] {
        docker.remove(&id).await.unwrap();
    }
    for id in containers(&docker, &agent).await {
        docker.remove(&id).await.unwrap();
    }
    live.shutdown().await;
    assert!(containers(&docker, &live_agent).await.is_empty());
}

/// A managed container whose owner process is long gone, of `instance`
/// (`None`: without the instance label).
async fn dead_owner_container(docker: &Docker, agent: &str, instance: Option<&str>) -> String {
    use warden_sandbox::spec::{
        HostIdentity, INSTANCE_LABEL, OwnerLabels, SpecInput, container_spec,
    };
    let config = SandboxConfig {
        instance: instance.unwrap_or_default().to_owned(),
        ..SandboxConfig::default()
    };
    let host = HostIdentity {
        id: "gone".into(),
        pid: u32::MAX - 1,
        start: 1,
    };
    let owner = OwnerLabels {
        agent: agent.to_owned(),
        task: None,
        strategy: warden_sandbox::Strategy::PerAgent,
    };
    let resolved = std::collections::BTreeMap::new();
    let masks = warden_sandbox::masks::Masks::default();
    let input = SpecInput {
        kind: ImageKind::Base,
        host: &host,
        owner: &owner,
        resolved: &resolved,
        masks: &masks,
    };
    let mut spec = container_spec(&input, &Grants::default(), &config).unwrap();
    if instance.is_none() {
        spec.labels.remove(INSTANCE_LABEL);
    }
    docker.start(&spec).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn warden_call_runs_a_sandboxed_tool_and_leaves_nothing() {
    let docker = docker().await;
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("clicall-{}", std::process::id());
    let cfg = config(dir.path(), &agent);
    let out = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["call", "code_run", "--config"])
        .arg(&cfg)
        .args(["--agent", &agent, "--args"])
        .arg(json!({"language": "python3", "source": "print(6 * 7)"}).to_string())
        .output()
        .unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(envelope["status"], "ok", "{envelope}");
    assert_eq!(envelope["data"]["stdout"], "42\n");
    assert!(
        containers(&docker, &agent).await.is_empty(),
        "shutdown removed it"
    );
}

#[test]
fn without_docker_the_sandboxed_tools_fail_clearly_and_plugins_keep_working() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hi there\n").unwrap();
    let cfg = dir.path().join("warden.toml");
    std::fs::write(
        &cfg,
        format!(
            "state-dir = \"{}\"\n\n[[plugins]]\npath = \"{}\"\ngrant-fs = [\"{}:/workspace:ro\"]\n\n\
             [sandbox]\n\n[agents.nodocker]\nlevel = \"elevated\"\nmode = \"autonomous\"\n",
            dir.path().join("state").display(),
            warden_test_artifacts::FS,
            ws.path().display()
        ),
    )
    .unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        let out = Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["call", tool, "--agent", "nodocker", "--config"])
            .arg(&cfg)
            .arg("--args")
            .arg(args.to_string())
            .env("DOCKER_HOST", "unix:///nonexistent/warden-test/docker.sock")
            .env("WARDEN_TRUST", warden_test_artifacts::signers_file())
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    let sandboxed = call("terminal_exec", json!({"command": "echo hi"}));
    assert_eq!(sandboxed["status"], "error", "{sandboxed}");
    assert_eq!(
        sandboxed["domain_code"], "docker_unavailable",
        "{sandboxed}"
    );
    assert!(
        sandboxed["message"]
            .as_str()
            .unwrap()
            .contains("ensure-docker"),
        "the message says what to do: {sandboxed}"
    );
    let plugin = call("fs_read", json!({"path": "hello.txt"}));
    assert_eq!(plugin["status"], "ok", "{plugin}");
    assert_eq!(plugin["data"]["content"], "hi there\n");
}
