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

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use warden_api::Manifest;
use warden_registry::{
    AdmissionPolicy, Admitted, Candidate, LoadOrder, Registry, RegistryError, admit_files,
    load_admitted,
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
    ) -> FirstLoad {
        let (admitted_tx, admitted) = oneshot::channel();
        let (loaded_tx, loaded) = mpsc::unbounded_channel();
        let done = tokio::spawn(async move {
            let admissions = admit(&admission, &registry, wanted).await;
            let (all, plugins) = match admissions {
                Ok(all) => all,
                Err(e) => {
                    let _ = admitted_tx.send(Err(e));
                    return Vec::new();
                }
            };
            let order = LoadOrder::new(all.len());
            let _ = admitted_tx.send(Ok((plugins, order.clone())));
            load_admitted(&runtime, all, order, |i, result| {
                let result = result
                    .as_ref()
                    .map(|c| c.plugin.clone())
                    .map_err(ToString::to_string);
                let _ = loaded_tx.send((i, result));
            })
            .await
        });
        FirstLoad {
            admitted,
            loaded,
            done,
        }
    }
}

/// Every plugin admitted (the configured ones first, in order), or the
/// first refusal.
async fn admit(
    policy: &AdmissionPolicy,
    registry: &Registry,
    wanted: Vec<PathBuf>,
) -> Result<(Vec<Admitted>, Vec<AdmittedPlugin>), ServerError> {
    let (fixed, installed) = tokio::join!(admit_files(policy, wanted), registry.admit_installed());
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
