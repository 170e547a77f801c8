//! The CPU-heavy half of a host's first load, started before the rest of
//! the host exists.
//!
//! Admitting a plugin (hashing it, checking its signature, reading its
//! manifest) and loading it (reading and authenticating its compiled form
//! from the cache, linking it, checking `tools()`) need only the runtime,
//! the admission policy and the registry. Started as soon as those exist,
//! they overlap opening the state database, building the gate and the
//! MCP handshake, instead of beginning after them; a call sent right
//! after `initialize` then finds its plugin loaded, or nearly.
//!
//! What registers the tools ([`crate::LivePlugins::load_initial`]) takes
//! the admissions when they are ready and each load as it ends; nothing
//! is registered before every plugin passed admission, as before.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use warden_api::Manifest;
use warden_registry::{
    AdmissionMemo, AdmissionPolicy, Admitted, Candidate, LoadOrder, Registry, RegistryError,
    admit_files, load_admitted,
};
use warden_runtime::{Plugin, Runtime};

use crate::ServerError;

/// One admitted plugin as registration sees it (its code loads apart).
#[derive(Debug, Clone)]
pub(crate) struct AdmittedPlugin {
    pub path: PathBuf,
    pub manifest: Manifest,
    /// Named by the configuration (not an installed plugin).
    pub fixed: bool,
}

/// The admissions, in load order, and the queue their loads start from
/// (a call waiting for one moves it to the front).
pub(crate) type Admissions = (Vec<AdmittedPlugin>, LoadOrder);

/// A first load under way.
pub(crate) struct FirstLoad {
    pub admitted: oneshot::Receiver<Result<Admissions, ServerError>>,
    /// Each load as it ends: the item's index and its plugin, or why it
    /// did not load.
    pub loaded: mpsc::UnboundedReceiver<(usize, Result<Plugin, String>)>,
    /// Every load's result, in order, once all ended (empty when
    /// admission failed).
    pub done: JoinHandle<Vec<Result<Candidate, RegistryError>>>,
}

impl FirstLoad {
    /// Admits the configured plugin files (`wanted`, in order) and the
    /// installed ones, then loads them all; runs until done even if
    /// nobody waits.
    pub fn start(
        runtime: Runtime,
        admission: AdmissionPolicy,
        registry: Registry,
        wanted: Vec<PathBuf>,
        memo: Option<Arc<AdmissionMemo>>,
    ) -> FirstLoad {
        let (admitted_tx, admitted) = oneshot::channel();
        let (loaded_tx, loaded) = mpsc::unbounded_channel();
        // Driven from a blocking-pool thread, not spawned: on a
        // single-threaded runtime a spawned task would not run before the
        // host's start yields that thread, after the handshake.
        let handle = tokio::runtime::Handle::current();
        let done = tokio::task::spawn_blocking(move || {
            handle.block_on(first_load(
                runtime,
                admission,
                registry,
                wanted,
                memo,
                admitted_tx,
                loaded_tx,
            ))
        });
        FirstLoad {
            admitted,
            loaded,
            done,
        }
    }
}

/// Admits, then loads, telling `admitted_tx` the admissions and
/// `loaded_tx` each load as it ends.
async fn first_load(
    runtime: Runtime,
    admission: AdmissionPolicy,
    registry: Registry,
    wanted: Vec<PathBuf>,
    memo: Option<Arc<AdmissionMemo>>,
    admitted_tx: oneshot::Sender<Result<Admissions, ServerError>>,
    loaded_tx: mpsc::UnboundedSender<(usize, Result<Plugin, String>)>,
) -> Vec<Result<Candidate, RegistryError>> {
    let admissions = admit(&admission, &registry, wanted, memo.clone()).await;
    let (all, plugins) = match admissions {
        Ok(all) => all,
        Err(e) => {
            let _ = admitted_tx.send(Err(e));
            return Vec::new();
        }
    };
    let order = LoadOrder::new(all.len());
    let _ = admitted_tx.send(Ok((plugins, order.clone())));
    let loaded = load_admitted(&runtime, all, order, |i, result| {
        let result = result
            .as_ref()
            .map(|c| c.plugin.clone())
            .map_err(ToString::to_string);
        let _ = loaded_tx.send((i, result));
    })
    .await;
    // After the loads: a changed memo is written once, off their path.
    if let Some(memo) = memo
        && let Err(e) = memo.save()
    {
        tracing::warn!(error = %e, "could not write the admission memo; the next start hashes every plugin");
    }
    loaded
}

/// Every plugin admitted (the configured ones first, in order), or the
/// first refusal.
async fn admit(
    policy: &AdmissionPolicy,
    registry: &Registry,
    wanted: Vec<PathBuf>,
    memo: Option<Arc<AdmissionMemo>>,
) -> Result<(Vec<Admitted>, Vec<AdmittedPlugin>), ServerError> {
    let (fixed, installed) = tokio::join!(
        admit_files(policy, wanted, memo.clone()),
        registry.admit_installed(memo)
    );
    let mut all = Vec::new();
    for a in fixed {
        all.push((a?, true));
    }
    for a in installed? {
        all.push((a, false));
    }
    let plugins = all
        .iter()
        .map(|(a, fixed)| AdmittedPlugin {
            path: a.path.clone(),
            manifest: a.manifest.clone(),
            fixed: *fixed,
        })
        .collect();
    Ok((all.into_iter().map(|(a, _)| a).collect(), plugins))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use std::time::{Duration, Instant};

    use warden_runtime::{CacheKey, RuntimeConfig};
    use warden_signing::{SecretKey, Signers};

    use super::*;

    /// A stdio host runs on one thread, which builds the store, the gate
    /// and the server without yielding while its plugins load: the first
    /// load must go on meanwhile (on the blocking pool), not wait for that
    /// thread, or the first call after `initialize` waits for all of it.
    #[test]
    fn the_first_load_goes_on_while_the_runtime_thread_is_busy() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("hello.wasm");
        std::fs::copy(warden_test_artifacts::HELLO, &plugin).unwrap();
        let key = SecretKey::generate().unwrap();
        warden_registry::sign_file(&plugin, &key).unwrap();
        let policy = AdmissionPolicy {
            signers: Signers::new().publisher("tests", key.public()),
            insecure_allow_unsigned: false,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let state = dir.path().join("state");
            let wasm = Runtime::new(
                RuntimeConfig::new(Some(state.join("cache")))
                    .with_cache_key(CacheKey::new([3; 32])),
            )
            .unwrap();
            let registry = Registry::open(&state, policy.clone(), wasm.clone()).unwrap();
            let first = FirstLoad::start(wasm, policy, registry, vec![plugin], None);
            // Start-up work that never yields the thread.
            let deadline = Instant::now() + Duration::from_secs(120);
            while !first.done.is_finished() {
                assert!(
                    Instant::now() < deadline,
                    "the first load waited for the busy runtime thread"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            let loaded = first.done.await.unwrap();
            assert_eq!(loaded.len(), 1);
            assert_eq!(loaded[0].as_ref().unwrap().name(), "hello");
        });
    }
}
