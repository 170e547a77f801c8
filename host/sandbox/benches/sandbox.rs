//! Sandbox call latency against the real Docker engine, in one run: per
//! lifecycle strategy a warm call (the owner's container exists) and a
//! cold one (it is created for the call), and the host's overhead against
//! a bare `docker exec` of the same command on the same container — through
//! the engine API (what the host itself does underneath) and through the
//! docker CLI. Prints p50/p90 per case. The owner's reader (where calls
//! allowed only because they read run: read-only mounts, no network) is
//! timed alternately with its writer.
//!
//! `cargo bench -p warden-sandbox` (needs Docker and the base image:
//! `scripts/ensure-docker`, `warden sandbox build-images --only base`)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark reports on stdout and fails loudly"
)]

use std::time::{Duration, Instant};

use warden_api::{CallContext, Grants};
use warden_sandbox::images::ImageKind;
use warden_sandbox::{
    DockerSandbox, ExecRequest, RunRequest, Sandbox, SandboxConfig, SharedSandbox, Strategy,
};

const WARM: usize = 60;
const COLD: usize = 8;

fn context(agent: &str, task: Option<&str>) -> CallContext {
    CallContext {
        principal: None,
        agent: agent.into(),
        session: "bench".into(),
        task: task.map(Into::into),
        request_id: "bench".into(),
    }
}

async fn run(sandbox: &SharedSandbox, context: &CallContext) -> String {
    run_as(sandbox, context, false).await
}

async fn run_as(sandbox: &SharedSandbox, context: &CallContext, read_only: bool) -> String {
    let grants = Grants::default();
    let out = sandbox
        .run(RunRequest {
            kind: ImageKind::Base,
            context,
            grants: &grants,
            argv: vec!["true".into()],
            stdin: None,
            working_dir: None,
            timeout: Duration::from_secs(60),
            max_output: None,
            paths: None,
            own_container: false,
            scratch_mb: None,
            read_only,
        })
        .await
        .unwrap();
    assert_eq!(out.output.exit_code, Some(0));
    out.container
}

fn report(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let pct = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    let (p50, p90) = (pct(50), pct(90));
    println!(
        "{name:<44} n={:<3} p50 {:>8.1} ms  p90 {:>8.1} ms",
        samples.len(),
        p50.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3
    );
    p50
}

async fn time<F, Fut>(n: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        f(i).await;
        samples.push(t.elapsed());
    }
    samples
}

async fn strategy(strategy: Strategy) -> SharedSandbox {
    let config = SandboxConfig {
        strategy,
        grace_period_secs: 0,
        ..SandboxConfig::default()
    };
    SharedSandbox(DockerSandbox::start(config).await.unwrap())
}

#[tokio::main]
async fn main() {
    let pid = std::process::id();
    println!("sandbox calls (`true` in the base image), {WARM} warm / {COLD} cold rounds");

    // per-agent: warm container vs one created per call (a new agent each time).
    let per_agent = SharedSandbox(
        DockerSandbox::start(SandboxConfig::default())
            .await
            .unwrap(),
    );
    let warm_ctx = context(&format!("bench-warm-{pid}"), None);
    let container = run(&per_agent, &warm_ctx).await;
    for _ in 0..5 {
        run(&per_agent, &warm_ctx).await;
    }
    run_as(&per_agent, &warm_ctx, true).await;
    // Writer and reader alternately, so both see the same machine.
    let (mut writer, mut reader) = (Vec::new(), Vec::new());
    for _ in 0..WARM {
        for (read_only, samples) in [(false, &mut writer), (true, &mut reader)] {
            let t = Instant::now();
            run_as(&per_agent, &warm_ctx, read_only).await;
            samples.push(t.elapsed());
        }
    }
    let host_warm = report("per-agent warm (Sandbox::run)", writer);
    let reader_warm = report("per-agent warm reader (read-only call)", reader);

    // The same command on the same container without the host around it.
    let docker = per_agent.0.docker().clone();
    let bare = ExecRequest {
        argv: vec!["true".into()],
        max_bytes: 4096,
        ..ExecRequest::default()
    };
    let api = report(
        "bare docker exec, engine API, same container",
        time(WARM, |_| {
            let (e, b, c) = (&docker, &bare, &container);
            async move {
                assert_eq!(e.exec(c, b).await.unwrap().exit_code, Some(0));
            }
        })
        .await,
    );
    let cli = report(
        "bare `docker exec` CLI, same container",
        time(WARM / 2, |_| {
            let c = container.clone();
            async move {
                let st = tokio::process::Command::new("docker")
                    .args(["exec", &c, "true"])
                    .status()
                    .await
                    .unwrap();
                assert!(st.success());
            }
        })
        .await,
    );
    println!(
        "host overhead, per-agent warm: {:.2}x the engine-API exec (+{:.1} ms), {:.2}x the docker CLI",
        host_warm.as_secs_f64() / api.as_secs_f64(),
        (host_warm.as_secs_f64() - api.as_secs_f64()) * 1e3,
        host_warm.as_secs_f64() / cli.as_secs_f64()
    );
    println!(
        "per-agent warm reader: {:.2}x the engine-API exec, {:.2}x the writer",
        reader_warm.as_secs_f64() / api.as_secs_f64(),
        reader_warm.as_secs_f64() / host_warm.as_secs_f64()
    );

    let cold_agent = strategy(Strategy::PerAgent).await;
    report(
        "per-agent cold (new agent, container created)",
        time(COLD, |i| {
            let s = &cold_agent;
            async move {
                run(s, &context(&format!("bench-cold-{pid}-{i}"), None)).await;
            }
        })
        .await,
    );

    let per_task = strategy(Strategy::PerTask).await;
    let task_ctx = context("bench", Some(&format!("bench-task-{pid}")));
    run(&per_task, &task_ctx).await;
    report(
        "per-task warm",
        time(WARM, |_| {
            let (s, c) = (&per_task, &task_ctx);
            async move {
                run(s, c).await;
            }
        })
        .await,
    );
    report(
        "per-task cold (new task)",
        time(COLD, |i| {
            let s = &per_task;
            async move {
                run(s, &context("bench", Some(&format!("bench-task-{pid}-{i}")))).await;
            }
        })
        .await,
    );

    let per_call = strategy(Strategy::PerCall).await;
    let call_ctx = context("bench", None);
    report(
        "per-call (always cold: create, exec, remove)",
        time(COLD, |_| {
            let (s, c) = (&per_call, &call_ctx);
            async move {
                run(s, c).await;
            }
        })
        .await,
    );

    for s in [per_agent, cold_agent, per_task, per_call] {
        s.shutdown().await;
    }
}
