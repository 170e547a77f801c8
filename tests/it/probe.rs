//! The probe component driven through the runtime: a table of grant set x
//! action -> outcome, the per-call limits, and isolation between calls.

use std::time::Duration;

use serde_json::{Value, json};
use warden_api::{FsAccess, Grants};

use crate::common::{self, data, error};

/// What the guest should report for an action under one grant set.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// `ok: true` and the detail contains this text.
    Ok(&'static str),
    /// `ok: false` (a WASI error the guest saw) and the detail contains this.
    Fails(&'static str),
}
use Expect::{Fails, Ok};

struct Scratch {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws.join("a.txt"), "inside").unwrap();
    std::fs::write(outside.join("secret.txt"), "TOPSECRET").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("secret_link")).unwrap();
    std::os::unix::fs::symlink("../outside", ws.join("escape")).unwrap();
    Scratch {
        _dir: dir,
        ws,
        outside,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn grant_matrix() {
    let s = scratch();
    let probe = common::probe().await;
    let secret_abs = s.outside.join("secret.txt").display().to_string();
    let no_grant = "no directories";
    // (action, [no grant, read-only, read-write])
    let table: Vec<(Value, [Expect; 3])> = vec![
        (
            json!({"action": "read", "path": "a.txt"}),
            [Fails("a.txt"), Ok("inside"), Ok("inside")],
        ),
        (
            json!({"action": "read", "path": "/workspace/a.txt"}),
            [Fails(no_grant), Ok("inside"), Ok("inside")],
        ),
        (
            json!({"action": "list", "path": "."}),
            [Fails("."), Ok("a.txt,escape,secret_link,sub"), Ok("a.txt")],
        ),
        (
            json!({"action": "write", "path": "new.txt", "content": "x"}),
            [Fails("new.txt"), Fails("not permitted"), Ok("written")],
        ),
        (
            json!({"action": "write", "path": "/workspace/sub/../c.txt", "content": "x"}),
            [Fails(no_grant), Fails("not permitted"), Ok("written")],
        ),
        (
            json!({"action": "read", "path": secret_abs}),
            [Fails("outside"), Fails("outside"), Fails("outside")],
        ),
        (
            json!({"action": "read", "path": "../outside/secret.txt"}),
            [Fails(""), Fails("not permitted"), Fails("not permitted")],
        ),
        (
            json!({"action": "read", "path": "/workspace/../outside/secret.txt"}),
            [Fails(""), Fails(""), Fails("")],
        ),
        (
            json!({"action": "read", "path": "secret_link"}),
            [Fails(""), Fails(""), Fails("")],
        ),
        (
            json!({"action": "read", "path": "escape/secret.txt"}),
            [Fails(""), Fails(""), Fails("")],
        ),
        (
            json!({"action": "write", "path": "escape/planted.txt", "content": "x"}),
            [Fails(""), Fails(""), Fails("")],
        ),
        (
            json!({"action": "read", "path": "a\u{0}b"}),
            [Fails("NUL"), Fails("NUL"), Fails("NUL")],
        ),
        (
            json!({"action": "env", "key": "HOME"}),
            [Fails("not found"), Fails("not found"), Fails("not found")],
        ),
        (
            json!({"action": "env", "key": "PATH"}),
            [Fails("not found"), Fails("not found"), Fails("not found")],
        ),
    ];
    let grant_sets = [
        Grants::default(),
        common::grant(&s.ws, FsAccess::Read),
        common::grant(&s.ws, FsAccess::ReadWrite),
    ];
    let mut failures = Vec::new();
    for (action, expected) in &table {
        for (grants, expect) in grant_sets.iter().zip(expected) {
            let envelope = common::call(
                &probe,
                "probe_run",
                action.clone(),
                grants,
                common::limits(),
            )
            .await;
            let out = data(&envelope);
            let ok = out["ok"].as_bool().unwrap();
            let detail = out["detail"].as_str().unwrap();
            let (want_ok, needle) = match expect {
                Ok(n) => (true, *n),
                Fails(n) => (false, *n),
            };
            if ok != want_ok || !detail.contains(needle) || detail.contains("TOPSECRET") {
                failures.push(format!(
                    "{action} with {} grant(s) {:?}: expected {expect:?}, got ok={ok} detail={detail:?}",
                    grants.fs.len(),
                    grants.fs.first().map(|g| g.access)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "grant matrix mismatches:\n{}",
        failures.join("\n")
    );
    assert!(
        !s.outside.join("planted.txt").exists(),
        "a write escaped the grant"
    );
    assert_eq!(std::fs::read_to_string(s.ws.join("new.txt")).unwrap(), "x");
    assert_eq!(std::fs::read_to_string(s.ws.join("c.txt")).unwrap(), "x");
}

/// The plugin asked for read-write, the operator granted read-only: the
/// call gets read-only. (The intersection in the other direction is
/// covered by the fs plugin, which asks for read-write too, so here the
/// operator's grant is the weaker side.)
#[tokio::test(flavor = "multi_thread")]
async fn effective_grant_is_the_weaker_side() {
    let s = scratch();
    let probe = common::probe().await;
    assert_eq!(
        probe.manifest().capabilities.filesystem,
        FsAccess::ReadWrite
    );
    let ro = common::grant(&s.ws, FsAccess::Read);
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "write", "path": "x", "content": "y"}),
        &ro,
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["ok"], false);
    assert!(!s.ws.join("x").exists());
}

async fn noop_works(probe: &warden_runtime::Plugin) {
    let e = common::call(
        probe,
        "probe_run",
        json!({"action": "noop"}),
        &Grants::default(),
        common::limits(),
    )
    .await;
    assert_eq!(
        data(&e)["ok"],
        true,
        "the next call after a failure must work"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_loop_stops_at_the_deadline() {
    let probe = common::probe().await;
    let limits = warden_api::CallLimits {
        deadline: Duration::from_millis(300),
        ..common::limits()
    };
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "spin", "ms": 60_000}),
        &Grants::default(),
        limits,
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "deadline_exceeded"),
        "{msg}"
    );
    assert!(msg.contains("300 ms"), "{msg}");
    noop_works(&probe).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_bomb_stops_at_the_limit() {
    let probe = common::probe().await;
    let limits = warden_api::CallLimits {
        memory_bytes: 32 << 20,
        ..common::limits()
    };
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "alloc", "bytes": 200_000_000u64}),
        &Grants::default(),
        limits,
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "memory_limit"),
        "{msg}"
    );
    assert!(msg.contains("32 MiB"), "{msg}");
    // Under the limit is fine.
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "alloc", "bytes": 4_000_000}),
        &Grants::default(),
        limits,
    )
    .await;
    assert_eq!(data(&e)["detail"], "4000000");
    noop_works(&probe).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn panic_is_an_error_result() {
    let probe = common::probe().await;
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "panic", "message": "boom at the probe"}),
        &Grants::default(),
        common::limits(),
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!((ty.as_str(), code.as_str()), ("ToolCrashed", "guest_panic"));
    assert!(msg.contains("boom at the probe"), "{msg}");
    noop_works(&probe).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_output_is_refused() {
    let probe = common::probe().await;
    let limits = warden_api::CallLimits {
        output_bytes: 1000,
        ..common::limits()
    };
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "emit", "bytes": 5000}),
        &Grants::default(),
        limits,
    )
    .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "output_limit")
    );
    assert!(msg.contains("1000 bytes"), "{msg}");
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "emit", "bytes": 10}),
        &Grants::default(),
        limits,
    )
    .await;
    assert_eq!(data(&e)["detail"], "xxxxxxxxxx");
}

#[tokio::test(flavor = "multi_thread")]
async fn chatty_stdout_is_capped_not_fatal() {
    let probe = common::probe().await;
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "print", "bytes": 200_000}),
        &Grants::default(),
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["detail"], "printed");
    let e = common::call(
        &probe,
        "probe_run",
        json!({"action": "log", "message": "hello host"}),
        &Grants::default(),
        common::limits(),
    )
    .await;
    assert_eq!(data(&e)["detail"], "logged");
}

/// 50 calls at once on one plugin: each sees a fresh instance (its static
/// counter at 1, nothing remembered from another call).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_are_isolated() {
    let probe = common::probe().await;
    let calls = (0..50).map(|i| {
        let probe = probe.clone();
        tokio::spawn(async move {
            let args = json!({"action": "count", "remember": format!("call-{i}")});
            common::call(
                &probe,
                "probe_run",
                args,
                &Grants::default(),
                common::limits(),
            )
            .await
        })
    });
    let mut seen = 0;
    for call in calls {
        let e = call.await.unwrap();
        assert_eq!(
            data(&e)["detail"],
            "calls=1 before=\"\"",
            "state leaked between calls"
        );
        seen += 1;
    }
    assert_eq!(seen, 50);
}

/// Calls one after another reuse a warm instance slot, whose memory stays
/// mapped where the kernel offers `PAGEMAP_SCAN`: each still starts from
/// the component's initial image, also after a call that grew its memory
/// past the part kept resident and filled it.
#[tokio::test(flavor = "multi_thread")]
async fn sequential_calls_start_from_the_initial_image() {
    let probe = common::probe().await;
    for i in 0..20 {
        let e = common::call(
            &probe,
            "probe_run",
            json!({"action": "count", "remember": format!("call-{i}")}),
            &Grants::default(),
            common::limits(),
        )
        .await;
        assert_eq!(
            data(&e)["detail"],
            "calls=1 before=\"\"",
            "state leaked into call {i}"
        );
        let e = common::call(
            &probe,
            "probe_run",
            json!({"action": "alloc", "bytes": 6_000_000}),
            &Grants::default(),
            common::limits(),
        )
        .await;
        assert_eq!(data(&e)["detail"], "6000000", "{e:?}");
    }
}

/// What a call's caller received.
#[derive(Debug, Default)]
struct Received {
    progress: std::sync::atomic::AtomicUsize,
    logs: std::sync::Mutex<Vec<String>>,
}

impl warden_api::CallEvents for Received {
    fn progress(&self, _done: f64, _total: Option<f64>, _message: Option<&str>) {
        self.progress
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn log(&self, _level: warden_api::LogLevel, source: &str, message: &str) {
        self.logs
            .lock()
            .unwrap()
            .push(format!("{source}: {message}"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_progress_reaches_the_caller_bounded_and_reported_once() {
    let probe = common::probe().await;
    let spec = probe.manifest().tools[0].clone();
    let received = std::sync::Arc::new(Received::default());
    let events: std::sync::Arc<dyn warden_api::CallEvents> = received.clone();
    let args = json!({"action": "steps", "steps": 100_000, "ms": 0});
    let ctx = common::context();
    let e = probe
        .invoke(warden_api::BackendCall {
            tool: &spec,
            args: &args,
            context: &ctx,
            grants: &Grants::default(),
            limits: common::limits(),
            events: Some(&events),
            paths: None,
            cwd: None,
            remote: None,
        })
        .await;
    assert!(data(&e)["ok"].as_bool().unwrap(), "{e:?}");
    let got = received.progress.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (1..=100).contains(&got),
        "the caller got {got} of 100,000 progress notifications"
    );
    let logs = received.logs.lock().unwrap();
    let reports: Vec<_> = logs.iter().filter(|l| l.contains("not relayed")).collect();
    assert_eq!(reports.len(), 1, "{logs:?}");
    assert!(reports[0].starts_with("warden: "), "{}", reports[0]);
    assert!(
        reports[0].contains(&format!("{}", 100_000 - got)),
        "{}",
        reports[0]
    );
}

/// Opening a FIFO blocks until a writer comes, on a host thread where no
/// epoch interrupt reaches: a call would hang past its deadline and hold
/// a thread of the host. The host refuses to open what can block (FIFOs,
/// devices, sockets), whatever the guest's code does.
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_cannot_hold_a_call_past_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("pipe", dir.path().join("link")).unwrap();
    // A character device too, where the test may make one (as root, as in
    // CI): a device like /dev/zero, made in the workspace.
    let device = std::process::Command::new("mknod")
        .arg(dir.path().join("zero"))
        .args(["c", "1", "5"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let probe = common::probe().await;
    let grants = common::grant(dir.path(), FsAccess::ReadWrite);
    let limits = warden_api::CallLimits {
        deadline: Duration::from_millis(2000),
        ..common::limits()
    };
    let mut cases = vec![("read", "pipe"), ("read", "link"), ("write", "pipe")];
    if device {
        cases.push(("read", "zero"));
    }
    for (action, path) in cases {
        let (p, g) = (probe.clone(), grants.clone());
        let args = json!({"action": action, "path": path, "content": "x"});
        let call =
            tokio::spawn(async move { common::call(&p, "probe_run", args, &g, limits).await });
        let Result::Ok(joined) = tokio::time::timeout(Duration::from_secs(30), call).await else {
            // Free the stuck thread (a writer and a reader end the
            // blocking opens), then fail.
            let _ = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&fifo);
            panic!("{action} {path}: the call never returned");
        };
        let e = joined.unwrap();
        let out = data(&e);
        assert!(!out["ok"].as_bool().unwrap(), "{action} {path}: {out}");
        let detail = out["detail"].as_str().unwrap();
        assert!(
            detail.contains("FIFO") || detail.contains("device"),
            "{action} {path}: the reason names what was refused: {out}"
        );
    }
    noop_works(&probe).await;
}

/// The race the lookup alone cannot stop: another writer swaps a regular
/// file and a FIFO at one name as fast as it can while the guest reads
/// it. Every read ends, with the file's content or a refusal (or not
/// found, mid-swap); none waits on the FIFO.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_swapped_for_a_fifo_mid_open_cannot_hold_a_call() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let (target, spare, tmp) = (
        dir.path().join("target"),
        dir.path().join("spare"),
        dir.path().join("tmp"),
    );
    std::fs::write(&target, "regular").unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&spare)
        .status()
        .unwrap();
    assert!(made.success());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (target, spare, tmp) = (target.clone(), spare.clone(), tmp.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&target, &tmp).unwrap();
                std::fs::rename(&spare, &target).unwrap();
                std::fs::rename(&tmp, &spare).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let probe = common::probe().await;
    let grants = common::grant(dir.path(), FsAccess::Read);
    let (mut read, mut refused) = (0, 0);
    for _ in 0..300 {
        let (p, g) = (probe.clone(), grants.clone());
        let args = json!({"action": "read", "path": "target"});
        let call =
            tokio::spawn(
                async move { common::call(&p, "probe_run", args, &g, common::limits()).await },
            );
        let Result::Ok(joined) = tokio::time::timeout(Duration::from_secs(30), call).await else {
            stop.store(true, Ordering::Relaxed);
            // Free the stuck thread: a writer ends a blocking open.
            for path in [&target, &spare, &tmp] {
                let _ = std::fs::OpenOptions::new().write(true).open(path);
            }
            panic!("a read of the swapped file never returned");
        };
        let e = joined.unwrap();
        let out = data(&e);
        let detail = out["detail"].as_str().unwrap();
        if out["ok"].as_bool().unwrap() {
            assert_eq!(detail, "regular", "{out}");
            read += 1;
        } else if detail.contains("FIFO") || detail.contains("special file") {
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    // Both sides of the swap were met; the point is that every call ended.
    assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
}
