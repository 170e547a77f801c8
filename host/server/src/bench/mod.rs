//! `warden bench`: end-to-end figures on this machine, through the same
//! gate and runtime `warden call` uses, and (with `mcp`) a real `warden
//! serve` child measured from outside. Reports percentiles, not a pass or
//! fail: targets live in DESIGN.md and the figures go in notes.

mod alone;
mod blocking;
mod blocking_http;
pub mod bridge;
mod console;
mod mcp;
mod report;
pub mod toolsmith;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_api::{CallContext, CallRequest, FsAccess, FsGrant, Grants, ToolHost};
use warden_gate::Gate;
use warden_policy::{AgentPolicy, Mode, RuleSet};
use warden_runtime::{Runtime, RuntimeConfig};

use crate::{HostOptions, Loaded, ServerError};
use alone::Alone;

pub use report::render;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The plugins (the fs plugin at least) and their configuration.
    pub host: HostOptions,
    /// Sequential calls to time.
    pub iterations: usize,
    /// Concurrent callers for the throughput run.
    pub concurrency: usize,
    /// Also measure a real `warden serve` child over stdio and HTTP: the
    /// `warden` binary to start.
    pub mcp: Option<PathBuf>,
    /// A bare rmcp server (`cargo build --release -p warden-mcp --example
    /// bare_rmcp`) whose `ping` is timed beside Warden's over stdio: the
    /// transport floor.
    pub floor: Option<PathBuf>,
    /// With `mcp`: a PostgreSQL database (of its own) a second served
    /// host keeps its state in, whose stdio `fs_read` is timed in the
    /// same rounds as the SQLite host's, in a loop of its own.
    pub postgres: Option<String>,
}

fn failed(what: impl Into<String>) -> ServerError {
    ServerError::Bench(what.into())
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ServerError {
    move |e| ServerError::io(what, e)
}

/// Percentiles of a set of durations, in microseconds.
fn summary(mut samples: Vec<Duration>) -> Value {
    samples.sort();
    let pct = |p: f64| percentile(&samples, p).map_or(0.0, |d| d.as_secs_f64() * 1e6);
    let mean =
        samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len().max(1) as f64 * 1e6;
    json!({"n": samples.len(), "p50_us": pct(0.5), "p99_us": pct(0.99), "mean_us": mean})
}

/// The sample at fraction `p` of the `sorted` samples (nearest rank);
/// none when there are none.
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied()
}

fn request(args: &Value, i: usize) -> CallRequest {
    CallRequest {
        tool: "fs_read".into(),
        args: args.clone(),
        context: CallContext {
            principal: None,
            agent: "bench".into(),
            session: "bench".into(),
            task: None,
            request_id: i.to_string(),
        },
    }
}

/// Runs every measurement; the figures as JSON (see [`render`]).
pub async fn run(args: &BenchOptions) -> Result<Value, ServerError> {
    let mut loads = Vec::new();
    let paths: Vec<_> = args
        .host
        .config
        .plugins
        .iter()
        .map(|p| p.path.clone())
        .chain(args.host.plugins.iter().cloned())
        .collect();
    // Every plugin is admitted (its signature checked) before any of it runs.
    let host = Loaded::load(&args.host).await?;
    for path in &paths {
        loads.push(load_figures(path).await?);
    }

    // The granted files live apart from the served host's state (`dir/state`),
    // which no grant may contain.
    let dir = tempfile_dir()?;
    let files = dir.join("files");
    std::fs::create_dir_all(&files).map_err(io("creating the bench files' directory"))?;
    std::fs::write(files.join("4k.txt"), "abcdefghijklmno\n".repeat(256))
        .map_err(io("writing the bench file"))?;
    std::fs::write(files.join("1b.txt"), "a").map_err(io("writing the bench file"))?;
    let grants = Grants {
        fs: vec![FsGrant {
            host_path: files.clone(),
            guest_path: "/workspace".into(),
            access: FsAccess::Read,
        }],
        ..Default::default()
    };
    let gate = builder(&host, &grants)?.build();
    if gate.spec("fs_read").is_none() {
        return Err(failed(
            "the call benchmark reads a 4 KiB file with fs_read: pass the fs plugin with --plugin",
        ));
    }
    let call_args = json!({"path": "4k.txt"});

    // Warm up, then time sequential calls.
    for i in 0..50 {
        check(gate.call(request(&call_args, i)).await)?;
    }
    let mut samples = Vec::with_capacity(args.iterations);
    for i in 0..args.iterations {
        let started = Instant::now();
        let envelope = gate.call(request(&call_args, i)).await;
        samples.push(started.elapsed());
        check(envelope)?;
    }

    // The smallest real call: a 1-byte read (fresh Store, instantiate,
    // one open and read, JSON both ways).
    let tiny = json!({"path": "1b.txt"});
    let mut small = Vec::with_capacity(args.iterations);
    for i in 0..args.iterations {
        let started = Instant::now();
        let envelope = gate.call(request(&tiny, i)).await;
        small.push(started.elapsed());
        check(envelope)?;
    }
    let audited = audited(&host, &grants, &tiny, args.iterations, &dir).await?;
    let alone = runtime_alone(&Alone::new(&host, &grants)?, args.iterations).await?;

    let throughput = throughput(&gate, &call_args, args.concurrency, args.iterations).await?;
    let grep = match host.plugins.iter().find(|(p, _)| {
        p.manifest()
            .tools
            .iter()
            .any(|t| t.name.as_str() == "search_grep")
    }) {
        Some((search, _)) => grep_figures(search, &files, &grants).await?,
        None => Value::Null,
    };
    let mcp = match &args.mcp {
        Some(warden) => {
            let plugins: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            let config = dir.join("warden.toml");
            std::fs::write(&config, mcp::install(&plugins, &dir, &files).await?)
                .map_err(io("writing the bench configuration"))?;
            // The PostgreSQL host: a state directory of its own (one
            // server per state directory), its state in the database.
            let postgres = match &args.postgres {
                Some(url) => {
                    let pg_dir = dir.join("postgres");
                    std::fs::create_dir_all(&pg_dir)
                        .map_err(io("creating the PostgreSQL host's directory"))?;
                    let pg_config = pg_dir.join("warden.toml");
                    let text = mcp::install(&plugins, &pg_dir, &files).await?;
                    std::fs::write(&pg_config, format!("{text}[state]\nurl = {url:?}\n"))
                        .map_err(io("writing the PostgreSQL host's configuration"))?;
                    Some(pg_config)
                }
                None => None,
            };
            let n = args.iterations.min(1000);
            json!({
                "installed_plugins": plugins.len(),
                "stdio": mcp::stdio(warden, args.floor.as_deref(), &config, postgres.as_deref(), n, args.concurrency).await?,
                "http": mcp::http(warden, &config, n, args.concurrency).await?,
            })
        }
        None => Value::Null,
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({
        "loads": loads,
        "fs_read_4k": summary(samples),
        "fs_read_1b": summary(small),
        "fs_read_1b_audited": audited,
        "runtime_alone": alone,
        "throughput": throughput,
        "search_grep_10k_files": grep,
        "decisions": decisions(),
        "mcp": mcp,
    }))
}

/// A gate over the loaded plugins, their files granted by `grants`, with
/// an agent that allows everything: the benchmark measures the call path.
fn builder(host: &Loaded, grants: &Grants) -> Result<warden_gate::GateBuilder, ServerError> {
    let mut builder = Gate::builder()
        .limits(host.limits)
        .env(warden_gate::PolicyEnv {
            workspace: "/workspace".into(),
            project: "/workspace".into(),
            home: "/home/bench".into(),
        })
        .agent(AgentPolicy::rules_only(
            "bench",
            Mode::Autonomous,
            RuleSet::default(),
        ));
    for (plugin, _) in &host.plugins {
        builder = builder.backend(plugin.name(), Arc::new(plugin.clone()), grants.clone())?;
    }
    Ok(builder)
}

/// The 1-byte read through a gate that keeps what a served host keeps, in
/// a state directory of its own under `dir`: the decision durable before
/// the tool runs (in the pending audit log under the default "normal"
/// durability, committed to the chain with a later batch), the outcome
/// queued after it, the grants in force read on every decision.
async fn audited(
    host: &Loaded,
    grants: &Grants,
    args: &Value,
    iterations: usize,
    dir: &Path,
) -> Result<Value, ServerError> {
    let state = dir.join("audited-state");
    std::fs::create_dir_all(&state).map_err(io("creating the audited gate's state"))?;
    let store = crate::state::open(&state, &host.config.state)?;
    let clock: Arc<dyn warden_api::Clock> = Arc::new(warden_api::SystemClock);
    let gate = builder(host, grants)?
        .journal(Arc::new(warden_store::Hooks(store.clone())))
        .grants(Arc::new(crate::StoreGrants::new(store, clock.clone())))
        .clock(clock)
        .build();
    for i in 0..50 {
        check(gate.call(request(args, i)).await)?;
    }
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..iterations {
        let started = Instant::now();
        let envelope = gate.call(request(args, i)).await;
        samples.push(started.elapsed());
        check(envelope)?;
    }
    gate.seal_audit();
    Ok(summary(samples))
}

/// `fs_read` of 1 B and of 4 KiB through the fs plugin's runtime alone
/// ([`alone`]), in process, beside the gate's figures.
async fn runtime_alone(alone: &Alone, iterations: usize) -> Result<Value, ServerError> {
    let mut figures = serde_json::Map::new();
    for (key, file) in [("fs_read_1b", "1b.txt"), ("fs_read_4k", "4k.txt")] {
        let mut samples = Vec::with_capacity(iterations);
        // The first 50 warm the caches.
        for i in 0..iterations + 50 {
            let took = alone.time(file).await?;
            if i >= 50 {
                samples.push(took);
            }
        }
        figures.insert(key.to_owned(), summary(samples));
    }
    Ok(Value::Object(figures))
}

/// `search_grep` over a tree of 10,000 files (no match, so every file is
/// read), without the denied-path check and with it (the bundled default
/// protection plus `[protect] read = ["secrets/"]`), alternated.
async fn grep_figures(
    search: &warden_runtime::Plugin,
    dir: &Path,
    grants: &Grants,
) -> Result<Value, ServerError> {
    let tree = dir.join("tree");
    for d in 0..100 {
        let sub = tree.join(format!("d{d:03}"));
        std::fs::create_dir_all(&sub).map_err(io("writing the bench tree"))?;
        for f in 0..100 {
            std::fs::write(sub.join(format!("f{f:03}.txt")), "one line\nanother line\n")
                .map_err(io("writing the bench tree"))?;
        }
    }
    let spec = search
        .manifest()
        .tools
        .iter()
        .find(|t| t.name.as_str() == "search_grep")
        .cloned()
        .ok_or_else(|| failed("search_grep is not in the search plugin"))?;
    let protection = Arc::new(warden_policy::Protection::new(
        &["secrets/".to_owned()],
        &[],
    ));
    let env = warden_policy::Env {
        workspace: "/workspace",
        project: "/workspace",
        cwd: "/workspace",
        home: "/home/bench",
    };
    let guard: Arc<dyn warden_api::PathGuard> = Arc::new(warden_gate::CallPaths::new(
        protection,
        &env,
        warden_api::Effects::Unattended,
    ));
    let args = json!({"pattern": "zzzz-no-match", "path": "tree"});
    let context = CallContext {
        principal: None,
        agent: "bench".into(),
        session: "bench".into(),
        task: None,
        request_id: "grep".into(),
    };
    let limits = warden_api::CallLimits {
        deadline: Duration::from_secs(120),
        ..warden_api::CallLimits::DEFAULT
    };
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..12 {
        for guarded in [false, true] {
            let started = Instant::now();
            let envelope = search
                .invoke(warden_api::BackendCall {
                    tool: &spec,
                    args: &args,
                    context: &context,
                    grants,
                    limits,
                    events: None,
                    paths: guarded.then_some(&guard),
                    cwd: None,
                    remote: None,
                })
                .await;
            let took = started.elapsed();
            check(envelope)?;
            // The first round warms the caches.
            if round > 0 {
                if guarded {
                    with.push(took)
                } else {
                    without.push(took)
                }
            }
        }
    }
    let (a, b) = (summary(without), summary(with));
    let overhead = match (a["p50_us"].as_f64(), b["p50_us"].as_f64()) {
        (Some(a), Some(b)) if a > 0.0 => (b - a) / a * 100.0,
        _ => 0.0,
    };
    Ok(json!({"files": 10_000, "without_check": a, "with_check": b, "overhead_pct": overhead}))
}

fn check(envelope: warden_api::Envelope) -> Result<(), ServerError> {
    if !envelope.is_ok() {
        return Err(failed(format!(
            "a benchmark call failed: {}",
            envelope.to_json()
        )));
    }
    Ok(())
}

/// Policy decision latency, p50/p99, with 1,000 rules spread over 100
/// tools, for a path, a plain and a compound shell specifier.
fn decisions() -> Value {
    let mut deny = Vec::new();
    for i in 0..1000 {
        deny.push(format!("tool{}.x(/generated{i}/**)", i % 100));
    }
    let allow = vec![
        "fs_write(/src/**)".to_owned(),
        "http_fetch(https://api.example.com/*)".to_owned(),
        "terminal_exec(cargo *)".to_owned(),
        "terminal_exec(git status)".to_owned(),
    ];
    let Ok(rules) = RuleSet::parse(&allow, &[], &deny) else {
        return Value::Null;
    };
    let agent = AgentPolicy::rules_only("bench", Mode::Default, rules);
    let env = warden_policy::Env {
        workspace: "/work",
        project: "/work",
        cwd: "/work",
        home: "/home/bench",
    };
    let mut out = serde_json::Map::new();
    for (label, name, category, spec) in [
        ("path", "fs_write", "file-system", "src/deep/module/file.rs"),
        (
            "plain",
            "http_fetch",
            "web",
            "https://api.example.com/v1/users",
        ),
        (
            "shell",
            "terminal_exec",
            "terminal",
            "cargo build --release && git status",
        ),
    ] {
        let call = warden_policy::Call {
            tool: warden_policy::ToolFacts {
                name,
                category,
                action_type: "code:write",
                side_effect: true,
                isolation: warden_policy::Isolation::Wasm,
                vcs: None,
            },
            specifier: Some(spec),
            resolved_path: None,
            remote_host: None,
            principal: None,
        };
        let mut samples = Vec::with_capacity(20_000);
        for _ in 0..20_000 {
            let started = Instant::now();
            std::hint::black_box(agent.decide(std::hint::black_box(&call), &env));
            samples.push(started.elapsed());
        }
        out.insert(label.to_owned(), summary(samples));
    }
    Value::Object(out)
}

/// Compile time (empty cache) and cached load time of one plugin.
async fn load_figures(path: &Path) -> Result<Value, ServerError> {
    let cache = tempfile_dir()?;
    let config = RuntimeConfig::new(Some(cache.clone())).with_cache_key(ephemeral_cache_key()?);
    let started = Instant::now();
    Runtime::new(config.clone())?.load(path).await?;
    let compile = started.elapsed();
    let runtime = Runtime::new(config)?;
    let mut cached = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        runtime.load(path).await?;
        cached.push(started.elapsed());
    }
    let _ = std::fs::remove_dir_all(&cache);
    Ok(json!({
        "plugin": path.display().to_string(),
        "compile_ms": compile.as_secs_f64() * 1e3,
        "cached_load": summary(cached),
        "verify": verify_figures(path)?,
    }))
}

/// What admitting a component costs on every load: walking it for the
/// manifest, the plugin digest and an ed25519 verification (signed here
/// with a key made for the run).
fn verify_figures(path: &Path) -> Result<Value, ServerError> {
    let bytes = std::fs::read(path).map_err(|source| ServerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let key = warden_signing::SecretKey::generate().map_err(|e| failed(e.to_string()))?;
    let digest = warden_registry::digest_of(path, &bytes)?;
    let signature = warden_signing::PluginSignature::sign(&digest, &key);
    let policy = warden_registry::AdmissionPolicy {
        signers: warden_signing::Signers::new().publisher("bench", key.public()),
        insecure_allow_unsigned: false,
    };
    let mut samples = Vec::with_capacity(100);
    for _ in 0..100 {
        let started = Instant::now();
        policy.admit(path, &bytes, Some(&signature))?;
        samples.push(started.elapsed());
    }
    Ok(summary(samples))
}

/// `concurrency` callers sharing `total` calls: calls per second.
async fn throughput(
    gate: &Gate,
    args: &Value,
    concurrency: usize,
    total: usize,
) -> Result<Value, ServerError> {
    let gate = Arc::new(gate.clone());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (gate, next, args) = (gate.clone(), next.clone(), args.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        return Ok::<(), ServerError>(());
                    }
                    check(gate.call(request(&args, i)).await)?;
                }
            })
        })
        .collect();
    for w in workers {
        w.await
            .map_err(|e| failed(format!("a benchmark caller failed: {e}")))??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok(json!({"concurrency": concurrency, "calls": total, "calls_per_sec": total as f64 / elapsed}))
}

/// A cache key for this process only: bench caches are scratch.
fn ephemeral_cache_key() -> Result<warden_runtime::CacheKey, ServerError> {
    let key = warden_signing::SecretKey::generate().map_err(|e| failed(e.to_string()))?;
    Ok(warden_runtime::CacheKey::new(
        key.derive_key(crate::state::CACHE_KEY_PURPOSE),
    ))
}

fn tempfile_dir() -> Result<std::path::PathBuf, ServerError> {
    let dir = std::env::temp_dir().join(format!(
        "warden-bench-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).map_err(io("creating a scratch directory"))?;
    Ok(dir)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
