//! Runtime benchmarks (divan): compile vs cached load, a trivial call
//! through a fresh Store (with and without the pooling allocator), and
//! `fs_read` of a 4 KiB file end to end through the runtime, and the cost
//! of the open-time checks on `fs_read` / `fs_write` (with a guard vs
//! without).
//!
//! cargo bench -p warden-runtime

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::json;
use warden_api::{
    BackendCall, CallContext, CallLimits, Effects, FsAccess, FsGrant, Grants, PathGuard,
};
use warden_runtime::{Plugin, Runtime, RuntimeConfig};

fn main() {
    divan::main();
}

fn tokio() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

fn context() -> CallContext {
    CallContext {
        principal: None,
        agent: "bench".into(),
        session: "bench".into(),
        task: None,
        request_id: "bench".into(),
    }
}

fn load(config: RuntimeConfig, path: &str) -> Plugin {
    tokio().block_on(async {
        Runtime::new(config)
            .unwrap()
            .load(Path::new(path))
            .await
            .unwrap()
    })
}

/// Loading the fs plugin with nothing cached: compile + link + tools() check.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn load_fs_compile(b: divan::Bencher) {
    b.bench(|| load(RuntimeConfig::new(None), warden_test_artifacts::FS));
}

/// Loading the fs plugin from a warm compile cache.
#[divan::bench(sample_count = 50, sample_size = 1)]
fn load_fs_cached(b: divan::Bencher) {
    let cache = tempfile::tempdir().unwrap();
    let config = RuntimeConfig::new(Some(cache.path().to_path_buf()))
        .with_cache_key(warden_runtime::CacheKey::new([1; 32]));
    load(config.clone(), warden_test_artifacts::FS);
    let runtime = Runtime::new(config).unwrap();
    b.bench(|| {
        tokio()
            .block_on(runtime.load(Path::new(warden_test_artifacts::FS)))
            .unwrap()
    });
}

/// A fresh Store, instantiate from the InstancePre, and a no-op invoke.
#[divan::bench(args = [true, false])]
fn trivial_call(b: divan::Bencher, pooling: bool) {
    let mut config = RuntimeConfig::new(None);
    config.pooling = pooling;
    let probe = load(config, warden_test_artifacts::PROBE);
    let spec = probe.manifest().tools[0].clone();
    let args = json!({"action": "noop"});
    let ctx = context();
    let grants = Grants::default();
    b.bench(|| {
        tokio().block_on(probe.invoke(BackendCall {
            tool: &spec,
            args: &args,
            context: &ctx,
            grants: &grants,
            limits: CallLimits::DEFAULT,
            events: None,
            paths: None,
            cwd: None,
            remote: None,
        }))
    });
}

/// Denied paths and protected paths as a gate's guard reports them, for
/// the open-time checks' cost (a prefix test: the policy's own matching
/// is paid once per call by the plugin's `path-denied` already).
#[derive(Debug)]
struct BenchGuard;

impl PathGuard for BenchGuard {
    fn denied(&self, path: &str) -> Option<String> {
        path.starts_with("/workspace/secrets/")
            .then(|| format!("{path} is denied"))
    }
    fn protected(&self, path: &str) -> Option<String> {
        path.starts_with("/workspace/.git/")
            .then(|| format!("{path} is protected"))
    }
    fn effects(&self) -> Effects {
        Effects::Unattended
    }
}

/// `tool` with `args` on the fs plugin, over a directory holding `f.txt`
/// with `content`, with or without a guard (the call's denied paths).
fn fs_call(b: divan::Bencher, tool: &str, args: serde_json::Value, content: &str, guarded: bool) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), content).unwrap();
    let fs = load(RuntimeConfig::new(None), warden_test_artifacts::FS);
    let spec = fs
        .manifest()
        .tools
        .iter()
        .find(|t| t.name.as_str() == tool)
        .unwrap()
        .clone();
    let ctx = context();
    let access = if tool == "fs_read" {
        FsAccess::Read
    } else {
        FsAccess::ReadWrite
    };
    let grants = Grants {
        fs: vec![FsGrant {
            host_path: dir.path().to_path_buf(),
            guest_path: "/workspace".into(),
            access,
        }],
        ..Default::default()
    };
    let guard: Arc<dyn PathGuard> = Arc::new(BenchGuard);
    b.bench(|| {
        let e = tokio().block_on(fs.invoke(BackendCall {
            tool: &spec,
            args: &args,
            context: &ctx,
            grants: &grants,
            limits: CallLimits::DEFAULT,
            events: None,
            paths: guarded.then_some(&guard),
            cwd: None,
            remote: None,
        }));
        assert!(e.is_ok());
    });
}

/// `fs_read` of a 4 KiB file in a read-only grant.
#[divan::bench]
fn fs_read_4k(b: divan::Bencher) {
    let content = "abcdefghijklmno\n".repeat(256);
    fs_call(b, "fs_read", json!({"path": "f.txt"}), &content, false);
}

/// `fs_read` of a 1-byte file: the fixed cost of an fs call.
#[divan::bench(args = [false, true])]
fn fs_read_1b(b: divan::Bencher, guarded: bool) {
    fs_call(b, "fs_read", json!({"path": "f.txt"}), "a", guarded);
}

/// `fs_write` of 1 byte over an existing file, with and without a guard
/// (an open that writes: checked before it truncates).
#[divan::bench(args = [false, true])]
fn fs_write_1b(b: divan::Bencher, guarded: bool) {
    let args = json!({"path": "f.txt", "content": "b"});
    fs_call(b, "fs_write", args, "a", guarded);
}
