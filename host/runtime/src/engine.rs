//! The process-wide engine, linker, compile cache and epoch ticker.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::RuntimeError;
use crate::bindings;
use crate::cache::{CacheKey, CompileCache, Swept};
use crate::http::HttpLimits;
use crate::plugin::Plugin;
use crate::state::HostState;

/// How the runtime is set up. See [`RuntimeConfig::new`] for the defaults.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The key that authenticates cache entries; without one there is no
    /// cache (entries are native code: unauthenticated ones never load).
    pub cache_key: Option<CacheKey>,
    /// Pre-allocate instance slots (faster instantiation, fixed capacity).
    pub pooling: bool,
    /// Most calls running at once; further calls wait for a slot.
    pub max_concurrent_calls: u32,
    /// The largest linear memory any call may be granted, in bytes.
    pub max_memory_bytes: u64,
    /// How often deadlines and cancellation are checked.
    pub epoch_tick: Duration,
    /// Run guest file operations on the calling thread instead of tokio's
    /// blocking pool. Local file operations take microseconds, far less
    /// than a hop to the pool and back; turn this off when granted
    /// directories live on slow (network) filesystems.
    pub fs_on_call_thread: bool,
    /// Per-request limits of outgoing HTTP.
    pub http: HttpLimits,
    /// Meter fuel: each call burns at most its limits' `fuel` (wasm code
    /// runs some 10-30% slower). Engine-wide, so components that need it
    /// (the toolsmith's) get a runtime of their own.
    pub fuel: bool,
}

impl RuntimeConfig {
    /// Authenticate cache entries with `key` (and so use the cache).
    pub fn with_cache_key(mut self, key: CacheKey) -> RuntimeConfig {
        self.cache_key = Some(key);
        self
    }

    /// Defaults: cache at `cache_dir` once a [`CacheKey`] is set (none:
    /// no cache), pooling allocator on, 64 concurrent
    /// calls, 256 MiB memory ceiling per call, deadlines checked every 5 ms,
    /// file operations on the calling thread, [`HttpLimits::DEFAULT`].
    pub fn new(cache_dir: Option<PathBuf>) -> RuntimeConfig {
        RuntimeConfig {
            cache_dir,
            cache_key: None,
            pooling: true,
            max_concurrent_calls: 64,
            max_memory_bytes: 256 << 20,
            epoch_tick: Duration::from_millis(5),
            fs_on_call_thread: true,
            http: HttpLimits::DEFAULT,
            fuel: false,
        }
    }

    /// This configuration, metering fuel.
    pub fn with_fuel(mut self) -> RuntimeConfig {
        self.fuel = true;
        self
    }
}

pub(crate) struct Shared {
    pub engine: Engine,
    pub linker: Linker<HostState>,
    pub cache: Option<CompileCache>,
    /// Calls running at once: `max_concurrent_calls`.
    pub slots: Arc<Semaphore>,
    /// Instances made ahead ([`crate::spare`]), waiting or adopted by a
    /// call: room of their own in the pool, so they never keep a call
    /// from its slot.
    pub spares: Arc<Semaphore>,
    pub config: RuntimeConfig,
    ticking: Arc<AtomicBool>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.ticking.store(false, Ordering::Relaxed);
    }
}

/// The wasm runtime: cheap to clone, one per process.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let engine_err = |e: wasmtime::Error| RuntimeError::CreateEngine(e.to_string());
        let mut wasm = Config::new();
        wasm.epoch_interruption(true);
        // No map from machine code back to wasm offsets: it only adds
        // offsets to trap backtraces, which no answer shows (a crash
        // reports the trap or the guest's panic message), and it is a
        // ninth of every compiled plugin, copied and authenticated on
        // every load (a start loading the four bundled plugins from the
        // cache: ~32 to ~28 ms of CPU on a 2-core VM).
        wasm.generate_address_map(false);
        wasm.consume_fuel(config.fuel);
        wasm.wasm_component_model(true);
        if config.pooling {
            // Room for every call at once and, beside them, every
            // instance made ahead.
            let n = config
                .max_concurrent_calls
                .max(1)
                .saturating_add(crate::spare::SPARES);
            let mut pool = PoolingAllocationConfig::new();
            // A wasip2 component is a handful of core instances (the
            // program plus adapter shims); size the pool for that.
            pool.total_component_instances(n)
                .total_core_instances(n.saturating_mul(8))
                .total_memories(n.saturating_mul(2))
                .total_tables(n.saturating_mul(8))
                .total_stacks(n)
                .max_memory_size(usize::try_from(config.max_memory_bytes).unwrap_or(usize::MAX))
                .max_core_instances_per_component(16)
                .max_memories_per_component(4)
                .max_tables_per_component(16)
                .max_unused_warm_slots(n);
            keep_resident(&mut pool);
            wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&wasm).map_err(engine_err)?;

        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(engine_err)?;
        crate::lookup::add_to_linker(&mut linker).map_err(engine_err)?;
        crate::special_files::add_to_linker(&mut linker).map_err(engine_err)?;
        crate::fs_entries::add_to_linker(&mut linker).map_err(engine_err)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(engine_err)?;
        bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(engine_err)?;

        let cache = match (config.cache_dir.as_deref(), &config.cache_key) {
            (Some(dir), Some(key)) => Some(CompileCache::open(dir, key.clone(), &engine)?),
            (Some(dir), None) => {
                tracing::warn!(dir = %dir.display(), "no compile cache key: compiling every plugin, caching nothing");
                None
            }
            (None, _) => None,
        };

        let ticking = Arc::new(AtomicBool::new(true));
        spawn_ticker(engine.clone(), config.epoch_tick, ticking.clone())?;
        Ok(Runtime {
            shared: Arc::new(Shared {
                engine,
                linker,
                cache,
                slots: Arc::new(Semaphore::new(config.max_concurrent_calls.max(1) as usize)),
                spares: Arc::new(Semaphore::new(crate::spare::SPARES as usize)),
                config,
                ticking,
            }),
        })
    }

    /// Loads a plugin file: reads its manifest, compiles it (or loads the
    /// cached compilation), links it, and checks `tools()` against the
    /// manifest in a sandbox with no grants.
    pub async fn load(&self, path: &Path) -> Result<Plugin, RuntimeError> {
        let bytes = std::fs::read(path).map_err(|source| RuntimeError::ReadPlugin {
            path: path.to_path_buf(),
            source,
        })?;
        Plugin::load(self.clone(), path, &bytes, None).await
    }

    /// Like [`Runtime::load`], for bytes already in memory; `path` names them
    /// in errors.
    pub async fn load_bytes(&self, path: &Path, bytes: &[u8]) -> Result<Plugin, RuntimeError> {
        Plugin::load(self.clone(), path, bytes, None).await
    }

    /// Like [`Runtime::load_bytes`], for bytes whose plugin digest
    /// (`warden_signing::plugin_digest`) admission already computed, so
    /// megabytes are not hashed twice. `digest` must be the digest of
    /// exactly these bytes: it names their compiled form in the cache.
    pub async fn load_admitted(
        &self,
        path: &Path,
        bytes: &[u8],
        digest: &str,
    ) -> Result<Plugin, RuntimeError> {
        Plugin::load(self.clone(), path, bytes, Some(digest)).await
    }

    /// Loads a component known only by its admitted `digest` and manifest
    /// `section` (its bytes were checked before and not kept): from the
    /// compile cache, or, when the cache has no authentic entry for
    /// `digest`, from the bytes `code` returns, which the caller must have
    /// checked against `digest`.
    pub async fn load_known(
        &self,
        path: &Path,
        section: &[u8],
        digest: &str,
        code: impl FnOnce() -> Result<Vec<u8>, RuntimeError>,
    ) -> Result<Plugin, RuntimeError> {
        Plugin::load_known(self.clone(), path, section, digest, code).await
    }

    /// Sweeps the compile cache ([`crate::cache::CompileCache::sweep`]):
    /// what it removed, or `None` without a cache. Reads the directory:
    /// call it off the async workers.
    /// Whether calls on this runtime burn fuel ([`RuntimeConfig::fuel`]).
    pub fn meters_fuel(&self) -> bool {
        self.shared.config.fuel
    }

    pub fn sweep_cache(&self, now: std::time::SystemTime) -> Option<Swept> {
        self.shared.cache.as_ref().map(|cache| cache.sweep(now))
    }
}

/// A call's memory and tables stay mapped between calls when the kernel
/// can say which pages a call dirtied (`PAGEMAP_SCAN`, Linux 6.7+): only
/// those pages are put back to the component's initial image (copied or
/// zeroed), instead of unmapping the whole slot with `madvise` and taking
/// a page fault on every page the next call touches again. That reset
/// was a third of a small call's time. Isolation is the same: every call
/// still starts from the initial image. Without the scan, the low region
/// would be reset whole on every call, so it stays off.
fn keep_resident(pool: &mut PoolingAllocationConfig) {
    /// A Rust guest's stack (1 MiB by default) sits below its data and
    /// heap: small calls dirty pages within the first few MiB.
    const MEMORY: usize = 4 << 20;
    const TABLES: usize = 64 << 10;
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(MEMORY)
            .table_keep_resident(TABLES);
    }
}

/// Advances the engine's epoch every `tick` until the runtime is dropped:
/// each running call checks its deadline and cancellation on every tick.
fn spawn_ticker(
    engine: Engine,
    tick: Duration,
    ticking: Arc<AtomicBool>,
) -> Result<(), RuntimeError> {
    std::thread::Builder::new()
        .name("warden-epoch".into())
        .spawn(move || {
            while ticking.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .map(drop)
        .map_err(|e| RuntimeError::CreateEngine(format!("starting the epoch thread: {e}")))
}
