//! Containment: pids, memory, timeouts, network, mounts, capabilities,
//! and the gate in front of Docker.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use warden_api::FsAccess;
use warden_sandbox::SandboxConfig;

use super::{rig, rig_with, stdout};
use crate::common::{data, error};

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_bomb_is_held_by_the_pids_limit() {
    let config = SandboxConfig {
        pids_limit: 64,
        ..SandboxConfig::default()
    };
    let r = rig("forkbomb", config).await;
    let source = json!({"language": "sh", "timeout_secs": 5, "source":
        "cat /sys/fs/cgroup/pids/pids.max; f() { f | f & }; f; sleep 30"});
    // sh code is read like a terminal command: a fork bomb is a circuit
    // breaker and asks, even in autonomous mode (nobody here answers).
    let asked = r.call("code_run", source.clone()).await;
    let (_, code, message) = error(&asked);
    assert_eq!(code, "approval_denied", "{message}");
    assert!(message.contains("circuit breaker"), "{message}");
    // Approved by a person, it runs, and the pids limit holds it.
    let bomb = r.call_approved("code_run", source).await;
    let (kind, code, message) = error(&bomb);
    assert_eq!((kind.as_str(), code.as_str()), ("LimitExceeded", "timeout"));
    assert!(
        message.contains("stdout: \"64\""),
        "the limit was 64: {message}"
    );
    assert!(
        message.contains("fork"),
        "the kernel refused forks at the limit: {message}"
    );
    // The bomb is gone (its group killed, or its container reset) and the
    // agent's sandbox works again.
    let after = r
        .sh("ps -e --no-headers | wc -l; cat /sys/fs/cgroup/pids/pids.max")
        .await;
    let out = stdout(&after);
    let lines: Vec<&str> = out.lines().collect();
    let procs: u64 = lines[0].trim().parse().unwrap();
    assert!(procs < 10, "the bomb's processes are gone: {out}");
    assert_eq!(lines[1], "64");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_hog_is_killed_at_the_limit() {
    let config = SandboxConfig {
        memory_mb: 128,
        ..SandboxConfig::default()
    };
    let r = rig("memhog", config).await;
    let hog = r
        .call(
            "code_run",
            json!({"language": "python3", "source": "b = bytearray(1 << 30)\nprint('allocated')"}),
        )
        .await;
    let d = data(&hog);
    assert_eq!(d["exit_code"], 137, "{d}");
    assert_eq!(d["signal"], 9);
    assert!(!stdout(d).contains("allocated"));
    let limit = r
        .sh("cat /sys/fs/cgroup/memory/memory.limit_in_bytes")
        .await;
    assert_eq!(stdout(&limit).trim(), (128u64 << 20).to_string());
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_kills_the_whole_process_group() {
    let r = rig("timeout", SandboxConfig::default()).await;
    let env = r
        .call(
            "terminal_exec",
            json!({"command": "sleep 300 & sleep 301 & (sleep 302; true) & echo started; wait", "timeout_secs": 2}),
        )
        .await;
    let (kind, code, message) = error(&env);
    assert_eq!((kind.as_str(), code.as_str()), ("LimitExceeded", "timeout"));
    assert!(
        message.contains("started"),
        "partial output is reported: {message}"
    );
    let left = r
        .sh("ps -eo args | grep -c '^sleep 30[012]$' || true")
        .await;
    assert_eq!(
        stdout(&left).trim(),
        "0",
        "every process of the group was killed"
    );
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_kills_what_escaped_the_group_too() {
    // A child in a session of its own (`setsid`), and one that also cleared
    // its environment, survive a kill of the call's process group. After
    // the timeout neither may still run: the heartbeat files stop growing.
    let r = rig("timeout-escape", SandboxConfig::default()).await;
    let beat = |name: &str| {
        format!("setsid sh -c 'while :; do echo x >> /workspace/{name}; sleep 0.2; done' &")
    };
    let command = format!(
        "{} env -i {} echo started; sleep 300",
        beat("beat-setsid"),
        beat("beat-env").replace("setsid ", "/usr/bin/setsid ")
    );
    let env = r
        .call(
            "terminal_exec",
            json!({"command": command, "timeout_secs": 2}),
        )
        .await;
    let (kind, code, message) = error(&env);
    assert_eq!(
        (kind.as_str(), code.as_str()),
        ("LimitExceeded", "timeout"),
        "{message}"
    );
    let size = |name: &str| {
        std::fs::metadata(r.dir.path().join(name))
            .map(|m| m.len())
            .unwrap_or(0)
    };
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let before = (size("beat-setsid"), size("beat-env"));
    assert!(before.0 > 0 && before.1 > 0, "the children ran: {before:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let after = (size("beat-setsid"), size("beat-env"));
    assert_eq!(before, after, "a child of the timed-out call still runs");
    r.done().await;
}

/// A TCP server of ours that greets and counts connections.
pub(super) struct Server {
    pub(super) addr: SocketAddr,
    pub(super) accepted: Arc<AtomicUsize>,
}

pub(super) fn server(ip: std::net::IpAddr) -> Server {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(b"hello from warden\n");
            let mut sink = [0u8; 16];
            let _ = stream.read(&mut sink);
        }
    });
    Server { addr, accepted }
}

const CONNECT: &str = r#"
import os, socket, sys
print("ifaces", sorted(os.listdir("/sys/class/net")))
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=3)
        print(target, "connected", s.recv(64).decode().strip())
        s.close()
    except OSError as e:
        print(target, "failed", type(e).__name__)
"#;

pub(super) fn connect_cmd(targets: &[SocketAddr]) -> String {
    let args: Vec<String> = targets.iter().map(ToString::to_string).collect();
    format!("python3 -c '{CONNECT}' {}", args.join(" "))
}

#[tokio::test(flavor = "multi_thread")]
async fn network_none_really_has_no_network() {
    let r = rig("nonet", SandboxConfig::default()).await;
    let gateway = r.sandbox.0.docker().bridge_gateway().await.unwrap();
    let ours = server(gateway);
    let out = stdout(&r.sh(&connect_cmd(&[ours.addr])).await);
    assert!(out.contains("ifaces ['lo']"), "only loopback: {out}");
    assert!(out.contains(&format!("{} failed", ours.addr)), "{out}");
    assert_eq!(ours.accepted.load(Ordering::SeqCst), 0);
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowlist_admits_only_the_granted_address() {
    let probe = rig("allow-probe", SandboxConfig::default()).await;
    let gateway = probe.sandbox.0.docker().bridge_gateway().await.unwrap();
    probe.done().await;
    let granted = server(gateway);
    let other = server(gateway);
    let r = rig_with(
        "allowlist",
        SandboxConfig::default(),
        FsAccess::Read,
        &[granted.addr.to_string()],
        "",
    )
    .await;
    let out = stdout(&r.sh(&connect_cmd(&[granted.addr, other.addr])).await);
    assert!(
        out.contains(&format!("{} connected hello from warden", granted.addr)),
        "{out}"
    );
    assert!(out.contains(&format!("{} failed", other.addr)), "{out}");
    assert_eq!(granted.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(
        other.accepted.load(Ordering::SeqCst),
        0,
        "the other port saw nothing"
    );
    // The sandbox cannot loosen its own firewall.
    let flush = r.sh("iptables -F OUTPUT 2>&1; echo rc=$?").await;
    assert!(!stdout(&flush).contains("rc=0"), "{flush}");
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_all_keeps_non_public_addresses_closed() {
    // The host's services on the bridge gateway, cloud metadata and the
    // private networks stay out of reach under `insecure:allow-all`,
    // unless an address grant names them.
    let probe = rig("allowall-probe", SandboxConfig::default()).await;
    let gateway = probe.sandbox.0.docker().bridge_gateway().await.unwrap();
    probe.done().await;
    let host_service = server(gateway);
    let named = server(gateway);
    let r = rig_with(
        "allowall",
        SandboxConfig::default(),
        FsAccess::Read,
        &["insecure:allow-all".to_owned(), named.addr.to_string()],
        "",
    )
    .await;
    let metadata: SocketAddr = "169.254.169.254:80".parse().unwrap();
    let out = stdout(
        &r.sh(&connect_cmd(&[host_service.addr, metadata, named.addr]))
            .await,
    );
    assert!(!out.contains("ifaces ['lo']"), "a bridge interface: {out}");
    assert!(
        out.contains(&format!("{} failed", host_service.addr)),
        "{out}"
    );
    assert!(out.contains(&format!("{metadata} failed")), "{out}");
    assert!(
        out.contains(&format!("{} connected", named.addr)),
        "an address grant still reaches its address: {out}"
    );
    assert_eq!(host_service.accepted.load(Ordering::SeqCst), 0);
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_resolving_to_a_private_address_is_refused() {
    let r = rig_with(
        "name-private",
        SandboxConfig::default(),
        FsAccess::Read,
        &["localhost:8080".to_owned()],
        "",
    )
    .await;
    // A command that is not read-only: a read-only one runs in the reader,
    // which has no network and so resolves no grant.
    let env = r
        .call("terminal_exec", json!({"command": "touch /tmp/probe"}))
        .await;
    let (_, _, message) = error(&env);
    assert!(
        message.contains("localhost") && message.contains("loopback"),
        "{message}"
    );
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_mount_cannot_be_written() {
    let r = rig_with(
        "readonly",
        SandboxConfig::default(),
        FsAccess::Read,
        &[],
        "",
    )
    .await;
    std::fs::write(r.dir.path().join("seen.txt"), "from the host").unwrap();
    let out = r
        .sh("cat /workspace/seen.txt; echo x > /workspace/new.txt; echo rc=$?; touch /etc/x; echo rc=$?")
        .await;
    let text = format!("{}{}", stdout(&out), out["stderr"].as_str().unwrap());
    assert!(text.contains("from the host"), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(!text.contains("rc=0"), "{text}");
    assert!(!r.dir.path().join("new.txt").exists());
    r.done().await;

    let rw = rig_with(
        "readwrite",
        SandboxConfig::default(),
        FsAccess::ReadWrite,
        &[],
        "",
    )
    .await;
    rw.sh("echo x > /workspace/new.txt").await;
    assert!(
        rw.dir.path().join("new.txt").exists(),
        "a read-write grant can write"
    );
    rw.done().await;
}

/// The bytes the engine keeps on the host of what container `id`'s main
/// process wrote: its log file's size (none without a log file).
fn engine_log_bytes(id: &str) -> u64 {
    let out = std::process::Command::new("docker")
        .args(["inspect", "--format", "{{.LogPath}}", id])
        .output()
        .expect("the docker CLI runs");
    assert!(out.status.success(), "docker inspect {id}: {out:?}");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if path.is_empty() {
        return 0;
    }
    std::fs::metadata(&path).map_or(0, |m| m.len())
}

/// Attack: a command writes without end to its container's main process
/// output (`/proc/1/fd/1`, `/proc/1/fd/2`), which the engine's default
/// log driver copies into a file on the host with no size limit: the
/// host's disk fills, and whatever secret the command prints lands there
/// in the clear, past every redaction.
#[tokio::test(flavor = "multi_thread")]
async fn a_command_cannot_fill_the_hosts_disk_through_the_engine_log() {
    let r = rig("enginelog", SandboxConfig::default()).await;
    let out = r
        .sh(concat!(
            "head -c 4000000 /dev/zero | tr '\\0' x > /proc/1/fd/1; echo fd1=$?; ",
            "head -c 4000000 /dev/zero | tr '\\0' x > /proc/1/fd/2; echo fd2=$?"
        ))
        .await;
    let said = stdout(&out);
    assert!(
        said.contains("fd1=0") && said.contains("fd2=0"),
        "the writes went through: {out}"
    );
    let ids = r.containers().await;
    assert!(!ids.is_empty());
    for id in &ids {
        let kept = engine_log_bytes(id);
        assert!(
            kept < 64 * 1024,
            "the engine kept {kept} bytes of {id}'s output on the host"
        );
    }
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn capabilities_are_dropped_and_the_user_is_not_root() {
    let r = rig("caps", SandboxConfig::default()).await;
    let out = stdout(
        &r.sh("id -u; grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs)' /proc/self/status")
            .await,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1000", "{out}");
    for cap in ["CapPrm", "CapEff", "CapBnd"] {
        let line = lines.iter().find(|l| l.starts_with(cap)).unwrap();
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("NoNewPrivs") && l.ends_with('1')),
        "{out}"
    );
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_command_never_reaches_docker() {
    let rules = "rules = { deny = [\"terminal_exec(rm *)\"] }\n";
    let r = rig_with(
        "denied",
        SandboxConfig::default(),
        FsAccess::ReadWrite,
        &[],
        rules,
    )
    .await;
    let env = r
        .call(
            "terminal_exec",
            json!({"command": "rm -rf /workspace/precious"}),
        )
        .await;
    let (kind, code, message) = error(&env);
    assert_eq!(
        (kind.as_str(), code.as_str()),
        ("PermissionDenied", "denied_by_rule"),
        "{message}"
    );
    assert!(
        r.containers().await.is_empty(),
        "no container was created for a denied call"
    );
    // Shell-aware: a denied part of a compound command denies it all.
    let env = r
        .call(
            "terminal_exec",
            json!({"command": "ls && rm -rf /workspace/precious"}),
        )
        .await;
    assert_eq!(error(&env).0, "PermissionDenied");
    assert!(r.containers().await.is_empty());
    // The same agent's allowed command does reach Docker.
    r.sh("true").await;
    assert_eq!(r.containers().await.len(), 1);
    r.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shell_that_runs_is_the_shell_the_policy_reads() {
    // `touch` is denied; to the analyser (bash) each line below is one
    // harmless command with no `touch` in it. Under dash, the first ran
    // `ls` in the background and then `touch` (`a &>f b` is `a &` and
    // `>f b`), and the second ran `touch` after `echo` (no `$'...'`).
    let r = rig_with(
        "one-shell",
        SandboxConfig::default(),
        FsAccess::ReadWrite,
        &[],
        "rules = { deny = [\"terminal_exec(touch *)\"] }\n",
    )
    .await;
    for (command, planted) in [
        ("ls &>/dev/null touch /workspace/planted-1", "planted-1"),
        ("echo $'\\' ; touch /workspace/planted-2 #'", "planted-2"),
    ] {
        let env = r.call("terminal_exec", json!({"command": command})).await;
        assert!(env.is_ok(), "{command}: {env:?}");
        assert!(
            !r.dir.path().join(planted).exists(),
            "`{command}` ran a second command the policy never saw"
        );
    }
    // And the words are bash's: $'...' is ANSI-C quoting.
    let out = r.sh("echo $'a\\tb'").await;
    assert_eq!(stdout(&out), "a\tb\n");
}
