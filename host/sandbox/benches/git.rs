//! The git tools' overhead against the real Docker engine (issue 21's
//! benchmarks): `git_status` on a 1,000-file repository in the agent's
//! warm git container against a bare exec of `git status` in that same
//! container (target <= 1.2x), and `git_clone` of a small fixture from a
//! dumb-HTTP server on the bridge gateway against a plain `git clone`
//! exec'd in a warm git container (target <= +150 ms). Prints p50/p90.
//! Clones after the first run in a standby container made while the
//! previous call's result was with the agent (`DockerSandbox::settle`
//! waits for it between rounds, untimed).
//!
//! `cargo bench -p warden-sandbox --bench git` (needs Docker, git on the
//! host, python3 for the fixture server, and the git image:
//! `scripts/ensure-docker`, `warden sandbox build-images --only git`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    reason = "a benchmark reports on stdout and fails loudly"
)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_api::{
    Backend, BackendCall, CallContext, CallLimits, Envelope, FsAccess, FsGrant, Grants, ToolSpec,
};
use warden_sandbox::spec::AGENT_LABEL;
use warden_sandbox::{Docker, ExecRequest, GitSettings, Sandbox as _, SandboxConfig, SandboxTools};

const WARM: usize = 40;
const CLONES: usize = 8;

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.name=B", "-c", "user.email=b@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

fn report(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let pct = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    println!(
        "{name:<52} n={:<3} p50 {:>8.1} ms  p90 {:>8.1} ms",
        samples.len(),
        pct(50).as_secs_f64() * 1e3,
        pct(90).as_secs_f64() * 1e3
    );
    pct(50)
}

struct Bench {
    tools: SandboxTools,
    specs: Vec<ToolSpec>,
    grants: Grants,
    context: CallContext,
}

impl Bench {
    async fn call(&self, tool: &str, args: Value) -> Value {
        let spec = self.specs.iter().find(|s| s.name.as_str() == tool).unwrap();
        let envelope = self
            .tools
            .invoke(BackendCall {
                tool: spec,
                args: &args,
                context: &self.context,
                grants: &self.grants,
                limits: CallLimits {
                    deadline: Duration::from_secs(120),
                    ..CallLimits::DEFAULT
                },
                events: None,
                paths: None,
                cwd: None,
                remote: None,
            })
            .await;
        match envelope {
            Envelope::Ok { data } => data,
            other => panic!("{tool}: {other:?}"),
        }
    }
}

#[tokio::main]
async fn main() {
    let pid = std::process::id();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let repo = ws.join("big");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    for i in 0..1000 {
        std::fs::write(repo.join(format!("src/f{i:04}.txt")), format!("file {i}\n")).unwrap();
    }
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "1000 files"]);
    assert!(
        Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(&ws)
            .status()
            .unwrap()
            .success()
    );

    let site = dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let small = site.join("small-src");
    std::fs::create_dir_all(&small).unwrap();
    for i in 0..20 {
        std::fs::write(small.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    git(&small, &["init", "-q"]);
    git(&small, &["add", "-A"]);
    git(&small, &["commit", "-q", "-m", "small"]);
    git(&site, &["clone", "-q", "--bare", "small-src", "small.git"]);
    git(&site.join("small.git"), &["update-server-info"]);

    let docker = Docker::connect().await.unwrap();
    let gateway = docker.bridge_gateway().await.unwrap();
    let tools = SandboxTools::new(SandboxConfig {
        git: GitSettings {
            allow_hosts: vec![gateway.to_string()],
            insecure_http: true,
            ..GitSettings::default()
        },
        ..SandboxConfig::default()
    })
    .unwrap();
    let bench = Bench {
        specs: tools.tools(),
        tools,
        grants: Grants {
            fs: vec![FsGrant {
                host_path: ws.clone(),
                guest_path: "/workspace".into(),
                access: FsAccess::ReadWrite,
            }],
            ..Grants::default()
        },
        context: CallContext {
            principal: None,
            agent: format!("bench-git-{pid}"),
            session: "bench".into(),
            task: None,
            request_id: "bench".into(),
        },
    };
    println!("git tools, {WARM} warm status rounds, {CLONES} clones");

    // git_status, warm.
    for _ in 0..5 {
        bench.call("git_status", json!({"repo": "big"})).await;
    }
    let mut samples = Vec::new();
    for _ in 0..WARM {
        let t = Instant::now();
        let v = bench.call("git_status", json!({"repo": "big"})).await;
        samples.push(t.elapsed());
        assert_eq!(v["clean"], true);
    }
    let tool = report("git_status via the tool (config check, env -i)", samples);
    let container = docker
        .list_managed(&[(AGENT_LABEL, bench.context.agent.as_str())])
        .await
        .unwrap()
        .into_iter()
        .next()
        .unwrap()
        .id;
    let bare = ExecRequest {
        argv: [
            "git",
            "-c",
            "safe.directory=*",
            "-C",
            "/workspace/big",
            "status",
            "--porcelain=v2",
            "-z",
        ]
        .map(String::from)
        .to_vec(),
        max_bytes: 1 << 20,
        ..ExecRequest::default()
    };
    let mut samples = Vec::new();
    for _ in 0..WARM {
        let t = Instant::now();
        assert_eq!(
            docker.exec(&container, &bare).await.unwrap().exit_code,
            Some(0)
        );
        samples.push(t.elapsed());
    }
    let api = report("bare exec of git status, same container", samples);
    println!(
        "git_status overhead: {:.2}x the bare exec (+{:.1} ms); target <= 1.2x",
        tool.as_secs_f64() / api.as_secs_f64(),
        (tool.as_secs_f64() - api.as_secs_f64()) * 1e3
    );

    // git_clone against a plain clone in the warm container.
    let mut server = Command::new("python3")
        .args([
            "-u",
            "-m",
            "http.server",
            "--bind",
            &gateway.to_string(),
            "0",
            "--directory",
        ])
        .arg(&site)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 serves the fixture");
    let port = {
        use std::io::BufRead as _;
        let mut line = String::new();
        std::io::BufReader::new(server.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        line.split("port ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap()
            .to_owned()
    };
    let url = format!("http://{gateway}:{port}/small.git");
    let sandbox = bench.tools.start().await.unwrap();
    let mut samples = Vec::new();
    for i in 0..CLONES {
        // Between calls (as between an agent's turns) the standby for the
        // next clone gets ready and the last clone's container goes; the
        // first clone makes its container at call time and is not counted,
        // like the plain clone's first round below.
        sandbox.0.settle().await;
        let t = Instant::now();
        bench
            .call("git_clone", json!({"url": url, "dest": format!("c{i}")}))
            .await;
        if i > 0 {
            samples.push(t.elapsed());
        }
    }
    let tool = report("git_clone via the tool (fenced standby)", samples);
    // The plain clone: `git clone` exec'd in a warm per-agent git
    // container (of a second agent) whose egress grant names the server.
    let open = Arc::new(SandboxTools::new(SandboxConfig::default()).unwrap());
    let open_sandbox = open.start().await.unwrap();
    let _ = &open_sandbox;
    let open_grants = Grants {
        net: vec![format!("{gateway}:{port}").parse().unwrap()],
        ..bench.grants.clone()
    };
    let ctx = CallContext {
        principal: None,
        agent: format!("bench-git-plain-{pid}"),
        ..bench.context.clone()
    };
    let mut samples = Vec::new();
    for i in 0..CLONES {
        let argv = vec![
            "git".to_owned(),
            "clone".to_owned(),
            "-q".to_owned(),
            url.clone(),
            format!("/tmp/p{i}"),
        ];
        let t = Instant::now();
        let out = open_sandbox
            .run(warden_sandbox::RunRequest {
                kind: warden_sandbox::images::ImageKind::Git,
                context: &ctx,
                grants: &open_grants,
                argv,
                stdin: None,
                working_dir: None,
                timeout: Duration::from_secs(60),
                max_output: None,
                paths: None,
                own_container: false,
                scratch_mb: None,
                read_only: false,
            })
            .await
            .unwrap();
        if i > 0 {
            samples.push(t.elapsed());
        }
        assert_eq!(out.output.exit_code, Some(0), "{out:?}");
    }
    let plain = report("plain git clone exec'd in a warm git container", samples);
    println!(
        "git_clone overhead: +{:.1} ms over the plain clone; target <= +150 ms",
        (tool.as_secs_f64() - plain.as_secs_f64()) * 1e3
    );
    let _ = server.kill();
    let _ = server.wait();
    bench.tools.shutdown().await;
    open.shutdown().await;
}
