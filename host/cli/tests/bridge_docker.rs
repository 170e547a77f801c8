//! The MCP bridge's `docker` runtime end to end, against the real engine:
//! `warden serve --stdio` bridging the fixture MCP server
//! (`tests/bridge-fixture`) in a container of a locally made image
//! (`support/bridge_image.rs`). The container is confined (no network,
//! read-only root, no capabilities, labels), serves approved calls, is
//! removed at shutdown, and when the host is killed the next host's
//! reconciliation removes it; an allowlisted server reaches only what it
//! was given. Also measures the cold start and a warm call through the
//! container's stdio FIFOs. These tests need Docker and the sandbox base image; without
//! them they fail, never skip.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

#[path = "support/bridge_image.rs"]
mod bridge_image;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_image::{FIXTURE_IN_IMAGE, containers, docker, fixture_image, inspect};
use serde_json::{Value, json};
use support::Server;
use support::bridged::{
    Bridged, content_kinds, envelope, fx_names, list_changed_within, results_as_direct,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The fixture bridged as `fx` on the docker runtime, its `[[bridge]]`
/// entry extended by `bridge`, and `extra` TOML after it.
fn docker_bridge(bridge: &str, extra: &str) -> Bridged {
    let image = fixture_image();
    Bridged::with(&format!(
        "[[bridge]]\nname = \"fx\"\ncommand = [\"{FIXTURE_IN_IMAGE}\"]\nruntime = \"docker\"\n\
         image = \"{image}\"\ncategory = \"external-data\"\ncall-timeout = \"20s\"\n\
         default-decision = \"allow\"\nread-only = [\"*\"]\n{bridge}\n\n{extra}"
    ))
}

/// The bridge containers of the warden process `pid`.
fn of_host(pid: u32) -> Vec<String> {
    containers(&[
        ("warden.bridge", "fx"),
        ("warden.host.pid", &pid.to_string()),
    ])
}

fn wait_gone(ids: &[String], limit: Duration) {
    let end = Instant::now() + limit;
    loop {
        let left: Vec<&String> = ids
            .iter()
            .filter(|id| docker(&["inspect", "--format", "{{.Id}}", id]).is_ok())
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < end, "containers left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[test]
fn a_docker_bridge_is_confined_serves_approved_calls_and_is_removed_at_shutdown() {
    let b = docker_bridge(
        "secrets = { API_TOKEN = \"token\" }",
        "[secrets.token]\nenv = \"BRIDGE_TEST_TOKEN\"\n",
    );
    let mut command = b.command();
    command
        .env("BRIDGE_TEST_TOKEN", "tok-5ecret-value")
        .env("HOST_ONLY_VARIABLE", "not for the server");
    let started = Instant::now();
    let mut server = Server::spawn(command);
    let status = b.listed();
    eprintln!(
        "warden serve start to docker bridge listed: {:?}",
        started.elapsed()
    );
    assert_eq!(status["state"], "ready", "{status}");
    assert_eq!(status["runtime"], "docker", "{status}");

    // One container (the listing session's), confined.
    let ids = of_host(server.pid());
    assert_eq!(ids.len(), 1, "{ids:?}");
    let c = inspect(&ids[0]);
    let host = &c["HostConfig"];
    assert_eq!(host["NetworkMode"], "none", "{host}");
    assert_eq!(host["ReadonlyRootfs"], true);
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert!(host["CapAdd"].is_null(), "{}", host["CapAdd"]);
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges"]));
    assert_eq!(host["Privileged"], false);
    assert_eq!(host["Init"], true);
    assert!(host["Memory"].as_i64().unwrap() > 0);
    assert_eq!(host["MemorySwap"], host["Memory"], "no swap");
    assert!(host["NanoCpus"].as_i64().unwrap() > 0);
    assert!(host["PidsLimit"].as_i64().unwrap() > 0);
    assert!(host["Tmpfs"]["/tmp"].is_string(), "{host}");
    // No host directory but its stdio FIFOs', read-only.
    let mounts = c["Mounts"].as_array().unwrap();
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    assert_eq!(mounts[0]["Destination"], "/run/warden-stdio");
    assert_eq!(mounts[0]["RW"], false, "{mounts:?}");
    let source = mounts[0]["Source"].as_str().unwrap();
    let listed: Vec<String> = std::fs::read_dir(source)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let config = &c["Config"];
    assert_eq!(config["User"], "1000:1000");
    let labels = &config["Labels"];
    assert_eq!(labels["warden.managed"], "true");
    assert_eq!(labels["warden.bridge"], "fx");
    assert_eq!(labels["warden.bridge.session"], "listing");
    assert_eq!(labels["warden.host.pid"], server.pid().to_string());
    assert!(!labels["warden.instance"].as_str().unwrap().is_empty());
    assert!(
        labels["warden.host.start"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
    // The secret is environment (what `docker inspect` shows, as
    // documented), never argv; nothing of Warden's environment leaks.
    let env = config["Env"].to_string();
    assert!(env.contains("API_TOKEN=tok-5ecret-value"), "{env}");
    assert!(!env.contains("HOST_ONLY_VARIABLE"), "{env}");
    assert!(!env.contains("BRIDGE_TEST_TOKEN"), "{env}");
    for argv in [
        &c["Path"],
        &c["Args"],
        &config["Cmd"],
        &config["Entrypoint"],
    ] {
        assert!(!argv.to_string().contains("tok-5ecret"), "{argv}");
    }
    let entrypoint = config["Entrypoint"].as_array().unwrap();
    assert_eq!(entrypoint[0], "/bin/sh", "{entrypoint:?}");
    assert_eq!(entrypoint[4..], [json!(FIXTURE_IN_IMAGE)], "{entrypoint:?}");

    // Nothing is published before approval; approved, calls go through
    // the container.
    assert!(fx_names(&mut server, 1).is_empty());
    let out = b.bridge(&["approve", "fx", "--reason", "r"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(list_changed_within(&server, Duration::from_secs(10)));
    assert!(fx_names(&mut server, 2).contains(&"fx_echo".to_owned()));
    let echoed = server.tool(3, "fx_echo", json!({"text": "hi from a container"}));
    assert_eq!(
        echoed["content"][0]["text"], "hi from a container",
        "{echoed}"
    );
    let keys = server.tool(4, "fx_env_keys", json!({}));
    let keys: Vec<String> =
        serde_json::from_str(keys["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(keys.contains(&"API_TOKEN".to_owned()), "{keys:?}");
    assert!(!keys.contains(&"HOST_ONLY_VARIABLE".to_owned()), "{keys:?}");
    let secret = server.tool(5, "fx_echo_secret", json!({"name": "API_TOKEN"}));
    assert!(!secret.to_string().contains("tok-5ecret-value"), "{secret}");
    assert!(secret.to_string().contains("[redacted:token]"), "{secret}");

    // A warm call through the gate and the FIFOs.
    let mut samples = Vec::new();
    for id in 100..200 {
        let t = Instant::now();
        let r = server.tool(id, "fx_echo", json!({"text": "x"}));
        samples.push(t.elapsed());
        assert_eq!(r["content"][0]["text"], "x");
    }
    eprintln!(
        "warm fx_echo through warden serve, docker runtime: p50 {:?}",
        p50(samples)
    );

    // A server flooding its attached stderr neither blocks nor
    // grows the log.
    let flooded = server.tool(6, "fx_stderr_flood", json!({"bytes": 10_000_000}));
    assert_eq!(flooded["content"][0]["text"], "flooded", "{flooded}");
    assert!(b.status()["stderr"].as_str().unwrap().len() <= 64 * 1024 + 1024);
    // Nor does the engine keep it on the host's disk (its default log
    // driver has no size limit).
    for id in of_host(server.pid()) {
        let path = inspect(&id)["LogPath"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let kept = std::fs::metadata(&path).map_or(0, |m| m.len());
        assert!(
            kept < 64 * 1024,
            "the engine kept {kept} bytes of {id}'s output in {path}"
        );
    }
    let again = server.tool(7, "fx_echo", json!({"text": "still here"}));
    assert_eq!(again["content"][0]["text"], "still here");

    // Alice's calls ran in a container of her own (per-agent sessions).
    let ids = of_host(server.pid());
    assert_eq!(ids.len(), 2, "{ids:?}");
    let sessions: Vec<Value> = ids
        .iter()
        .map(|id| inspect(id)["Config"]["Labels"]["warden.bridge.session"].clone())
        .collect();
    assert!(
        sessions
            .iter()
            .any(|s| s.as_str().is_some_and(|s| s.contains("alice"))),
        "{sessions:?}"
    );

    // A server that dies mid-call (its container exits) is reported, and
    // the next call runs in a new container.
    let crashed = envelope(&server.tool(9, "fx_crash", json!({})));
    assert_eq!(crashed["domain_code"], "upstream_unavailable", "{crashed}");
    let after = server.tool(10, "fx_echo", json!({"text": "again"}));
    assert_eq!(after["content"][0]["text"], "again", "{after}");
    let now = of_host(server.pid());
    assert!(now.iter().any(|id| !ids.contains(id)), "{ids:?} {now:?}");

    // Shutdown removes the containers, and their stdio directories.
    let stdio = format!("warden-stdio-{}-", server.pid());
    let stdio_dirs = || {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&stdio))
            .count()
    };
    assert!(stdio_dirs() > 0);
    let closing = Instant::now();
    assert!(
        server.close(Duration::from_secs(30)).is_some(),
        "warden exits"
    );
    eprintln!(
        "warden exited {:?} after its client hung up",
        closing.elapsed()
    );
    wait_gone(&ids, Duration::from_secs(10));
    assert_eq!(stdio_dirs(), 0, "no stdio directory is left");
}

/// The same results as from the fixture run directly, every content kind
/// byte for byte, through the container's stdio; a result over the cap
/// and a call past its timeout are errors, and the session goes on.
#[test]
fn results_cross_the_container_as_the_server_gave_them() {
    let b = docker_bridge("pin = false\nmax-result-bytes = 65536", "");
    b.call_timeout("1s");
    let mut server = b.serve();
    assert_eq!(b.listed()["state"], "ready");
    let mut kinds = content_kinds();
    kinds.push(("echo", json!({"text": "ü\u{1F600}\\n\"x".repeat(2000)})));
    results_as_direct(&mut server, &kinds, 10);
    let huge = envelope(&server.tool(30, "fx_huge", json!({"bytes": 100_000})));
    assert_eq!(huge["domain_code"], "output_limit", "{huge}");
    let slow = envelope(&server.tool(31, "fx_slow", json!({"ms": 10_000})));
    assert_eq!(slow["domain_code"], "deadline_exceeded", "{slow}");
    let after = server.tool(32, "fx_echo", json!({"text": "after"}));
    assert_eq!(after["content"][0]["text"], "after", "{after}");
}

#[test]
fn the_orphan_of_a_killed_host_is_removed_by_the_next_host() {
    let b = docker_bridge("pin = false", "");
    let first = Server::spawn(b.command());
    assert_eq!(b.listed()["state"], "ready");
    let orphans = of_host(first.pid());
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    // Its stdio directory (the container's mount), named for its host.
    let stdio = inspect(&orphans[0])["Mounts"][0]["Source"]
        .as_str()
        .unwrap()
        .to_owned();
    let stdio = std::path::Path::new(&stdio).parent().unwrap().to_path_buf();
    assert!(
        stdio
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("warden-stdio-{}-", first.pid())),
        "{stdio:?}"
    );
    first.kill();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        docker(&["inspect", "--format", "{{.Id}}", &orphans[0]]).is_ok(),
        "the killed host left its container"
    );
    assert!(stdio.exists(), "and its stdio directory");
    let _ = std::fs::remove_file(b.dir.join("state/admin.sock"));

    // The next host of this installation reconciles before it starts its
    // own server container.
    let mut next = Server::spawn(b.command());
    assert_eq!(b.listed()["state"], "ready");
    wait_gone(&orphans, Duration::from_secs(10));
    assert!(
        !stdio.exists(),
        "the orphan's stdio directory is removed too"
    );
    let echoed = next.tool(1, "fx_echo", json!({"text": "hi"}));
    assert_eq!(echoed["content"][0]["text"], "hi", "{echoed}");
    let own = of_host(next.pid());
    assert_eq!(own.len(), 2, "listing and alice: {own:?}");
    assert!(next.close(Duration::from_secs(30)).is_some());
    wait_gone(&own, Duration::from_secs(10));
}

/// Bridges the fixture's entry with `image` in place of the fixture's
/// image, and checks that the session failed, that its problem names
/// the image and says `says`, and that nothing of it is left.
fn a_failed_start_says(b: &Bridged, image: &str, says: &str) {
    let text = std::fs::read_to_string(&b.config)
        .unwrap()
        .replace(&fixture_image(), image);
    std::fs::write(&b.config, text).unwrap();
    let server = Server::spawn(b.command());
    let status = b.listed();
    assert_eq!(status["state"], "failed", "{status}");
    let problem = status["problem"].to_string();
    assert!(
        problem.contains(image) && problem.contains(says),
        "{problem}"
    );
    assert!(
        of_host(server.pid()).is_empty(),
        "nothing left of a failed start"
    );
    assert!(server.close(Duration::from_secs(30)).is_some());
}

#[test]
fn a_missing_image_is_reported_never_pulled() {
    let b = docker_bridge("pin = false", "");
    a_failed_start_says(&b, "warden-test-no-such-image:none", "never pulls");
}

/// An image without the shell Warden starts a bridged server with (the
/// stdio FIFOs are connected by `/bin/sh` from the image) is refused
/// before anything runs, naming what it lacks, not left to a container
/// that dies with a line on its stderr.
#[test]
fn an_image_without_a_shell_is_reported_as_such() {
    let b = docker_bridge("pin = false", "");
    // An image with no files at all: an empty tar archive, imported.
    let empty = b.dir.join("empty.tar");
    std::fs::write(&empty, [0u8; 10240]).unwrap();
    let image = "warden-test-no-shell:local";
    docker(&["import", &empty.display().to_string(), image]).unwrap();
    a_failed_start_says(&b, image, "has no `/bin/sh`");
}

/// A line-delimited JSON-RPC client over a server's stdio.
struct Raw<R, W> {
    read: BufReader<R>,
    write: W,
}

impl<R: tokio::io::AsyncRead + Unpin, W: tokio::io::AsyncWrite + Unpin> Raw<R, W> {
    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.flush().await.unwrap();
    }

    /// The response `id` (notifications skipped).
    async fn response(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(30), self.read.read_line(&mut line))
                .await
                .expect("the server answers")
                .unwrap();
            assert!(n > 0, "the server's output ended");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    async fn initialize_and_list(&mut self) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}),
        )
        .await;
        self.response(0).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        self.response(1).await
    }

    async fn echo_p50(&mut self, n: u64) -> Duration {
        let mut samples = Vec::new();
        for id in 10..10 + n {
            let t = Instant::now();
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}}}))
                .await;
            let r = self.response(id).await;
            samples.push(t.elapsed());
            assert_eq!(r["result"]["content"][0]["text"], "x", "{r}");
        }
        p50(samples)
    }
}

fn settings(bridge: &str) -> warden_sandbox::ServerSettings {
    let instance = format!("test-{}", std::process::id());
    let mut settings = warden_sandbox::ServerSettings::new(bridge, &fixture_image(), &instance);
    settings.command = vec![FIXTURE_IN_IMAGE.to_owned()];
    settings
}

fn stderr_sink() -> warden_sandbox::stdio_server::StderrSink {
    Arc::new(|_: &[u8]| {})
}

#[tokio::test(flavor = "multi_thread")]
async fn cold_start_to_first_listing_and_a_warm_call_through_the_container() {
    let servers = warden_sandbox::StdioServers::new(settings("fxbench")).unwrap();
    // The first start connects to the engine and reconciles: not counted.
    let warmup = servers.start("warmup", stderr_sink()).await.unwrap();
    let mut handle = warmup.handle;
    handle.shutdown().await;
    let mut cold = Vec::new();
    let mut warm = Duration::ZERO;
    for i in 0..5 {
        let t = Instant::now();
        let server = servers
            .start(&format!("s{i}"), stderr_sink())
            .await
            .unwrap();
        let mut raw = Raw {
            read: BufReader::new(server.stdout),
            write: server.stdin,
        };
        let listed = raw.initialize_and_list().await;
        cold.push(t.elapsed());
        assert!(listed["result"]["tools"].as_array().unwrap().len() > 5);
        if i == 0 {
            warm = raw.echo_p50(200).await;
        }
        let mut handle = server.handle;
        let id = handle.container().to_owned();
        drop(raw);
        handle.shutdown().await;
        assert!(
            docker(&["inspect", "--format", "{{.Id}}", &id]).is_err(),
            "removed at shutdown"
        );
    }
    // The same calls to the same binary as a plain process, for the
    // container's overhead.
    let mut child = tokio::process::Command::new(bridge_image::fixture_binary())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut raw = Raw {
        read: BufReader::new(child.stdout.take().unwrap()),
        write: child.stdin.take().unwrap(),
    };
    raw.initialize_and_list().await;
    let direct = raw.echo_p50(200).await;
    cold.sort();
    eprintln!(
        "docker runtime: cold start to first tools/list min {:?} p50 {:?} max {:?}; \
         warm echo p50 {warm:?} (direct process {direct:?}, container overhead {:?})",
        cold[0],
        cold[cold.len() / 2],
        cold[cold.len() - 1],
        warm.saturating_sub(direct)
    );
    assert!(
        cold[cold.len() / 2] < Duration::from_secs(10),
        "cold start {cold:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowlisted_server_reaches_only_what_it_was_given() {
    // A listener on the host, reached through the bridge gateway.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let gateway = docker(&[
        "network",
        "inspect",
        "bridge",
        "--format",
        "{{range .IPAM.Config}}{{.Gateway}}{{end}}",
    ])
    .unwrap()
    .trim()
    .to_owned();
    let gateway = if gateway.is_empty() {
        "172.17.0.1".to_owned()
    } else {
        gateway
    };
    let mut settings = settings("fxnet");
    settings.net = vec![format!("{gateway}:{port}").parse().unwrap()];
    let servers = warden_sandbox::StdioServers::new(settings).unwrap();
    let server = servers.start("alice", stderr_sink()).await.unwrap();
    let mut handle = server.handle;
    let id = handle.container().to_owned();
    let c = inspect(&id);
    let mode = c["HostConfig"]["NetworkMode"].as_str().unwrap().to_owned();
    let holder = mode.strip_prefix("container:").unwrap().to_owned();
    let h = inspect(&holder);
    assert_eq!(h["Config"]["Labels"]["warden.role"], "bridge-network");
    assert_eq!(h["Config"]["Labels"]["warden.bridge"], "fxnet");
    assert_eq!(h["HostConfig"]["CapDrop"], json!(["ALL"]));
    // From inside the server's namespace: the granted pair connects, any
    // other port of the same address is refused at once.
    let connect = |port: u16| {
        let script = format!(
            "import socket\ntry:\n    socket.create_connection(('{gateway}', {port}), 3).close()\n    print('open')\nexcept OSError as e:\n    print('refused', e)\n"
        );
        docker(&["exec", &id, "python3", "-c", &script]).unwrap()
    };
    let granted = connect(port);
    assert!(granted.starts_with("open"), "{granted}");
    let t = Instant::now();
    let other = connect(port.wrapping_add(1).max(1));
    assert!(other.starts_with("refused"), "{other}");
    assert!(t.elapsed() < Duration::from_secs(3), "refused fast");
    drop(server.stdin);
    drop(server.stdout);
    handle.shutdown().await;
    for gone in [&id, &holder] {
        assert!(
            docker(&["inspect", "--format", "{{.Id}}", gone]).is_err(),
            "{gone} removed"
        );
    }
    drop(listener);
}
