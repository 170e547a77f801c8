//! Plugins in a running server: install, replace and remove them without a
//! restart, from the admin API or a watched directory.
//!
//! Every change goes the same way: read and admit the component (its
//! signature, before any of its code runs), load it (from the compile
//! cache when it was seen before), check the new tool table for conflicts
//! without applying it, record the change in the registry when it is an
//! install, then swap the gate's table in one step and tell connected
//! clients that their lists changed. Any failure leaves the previous
//! version serving and says why. One change runs at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_api::{AdminError, Attribution, AuditEvent, BoxFuture, Grants, Journal, PluginAdmin};
use warden_gate::{Gate, Registration, TableChange};
use warden_mcp::Server;
use warden_registry::{Candidate, DirWatcher, Registry, WatchEvent, component_files};

use crate::first_load::FirstLoad;
use crate::host::{registration, registration_of};

/// The grants of plugins that are not listed in `[[plugins]]`, by name.
#[derive(Debug, Clone, Default)]
pub struct NamedGrants {
    pub by_name: BTreeMap<String, Grants>,
    /// `"*"`: for plugins without an entry.
    pub fallback: Option<Grants>,
}

impl NamedGrants {
    pub fn of(&self, name: &str) -> Grants {
        self.by_name
            .get(name)
            .or(self.fallback.as_ref())
            .cloned()
            .unwrap_or_default()
    }
}

/// Where a change of plugins comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// An operator (the admin API): recorded in the registry and, with a
    /// store other replicas share, in the deployment's plugins first.
    Admin,
    /// A watched file: loaded or unloaded only.
    Watch,
    /// Another replica's change, from the deployment's plugins: recorded
    /// in this registry only (an install with its time there:
    /// [`LivePlugins::add_replicated`]).
    Replica,
}

/// The plugins of a running server.
pub struct LivePlugins {
    gate: Gate,
    registry: Registry,
    server: Server,
    grants: NamedGrants,
    /// Names that come from the config file: not removable here.
    fixed: Mutex<BTreeSet<String>>,
    /// Watched files and the plugin each one loaded.
    watched: Mutex<BTreeMap<PathBuf, String>>,
    /// One change at a time.
    changing: tokio::sync::Mutex<()>,
    /// Where operators' removals are audited.
    journal: Arc<dyn Journal>,
    /// The host's first load ([`LivePlugins::load_initial`]): every
    /// other change, and a listing, waits for it to end.
    startup: warden_mcp::Startup,
    /// The store, when other replicas share it: installs and removals go
    /// to the deployment's plugins (`plugin_sync.rs`).
    shared: Option<Arc<dyn warden_store::Store>>,
}

impl std::fmt::Debug for LivePlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePlugins").finish_non_exhaustive()
    }
}

fn describe(change: &TableChange) -> Value {
    json!({ "added": change.added, "replaced": change.replaced, "removed": change.removed })
}

impl LivePlugins {
    pub fn new(
        gate: Gate,
        registry: Registry,
        server: Server,
        grants: NamedGrants,
        journal: Arc<dyn Journal>,
        startup: warden_mcp::Startup,
        store: &Arc<dyn warden_store::Store>,
    ) -> LivePlugins {
        LivePlugins {
            gate,
            registry,
            server,
            grants,
            fixed: Mutex::new(BTreeSet::new()),
            watched: Mutex::new(BTreeMap::new()),
            changing: tokio::sync::Mutex::new(()),
            journal,
            startup,
            shared: store.shared().then(|| store.clone()),
        }
    }

    pub(crate) fn is_loaded(&self, name: &str) -> bool {
        self.gate.owners().iter().any(|o| o == name)
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    pub(crate) fn shared(&self) -> Option<&Arc<dyn warden_store::Store>> {
        self.shared.as_ref()
    }

    /// Names this host keeps out of the deployment's plugins: the
    /// configuration's and watched files'.
    pub(crate) fn local_only(&self, name: &str) -> bool {
        self.is_fixed(name) || self.watched().values().any(|n| n == name)
    }

    /// Waits for the host's first load to end (well or not: a failed one
    /// stops the host, and until then the registry still answers).
    async fn loaded(&self) {
        let _ = self.startup.wait().await;
    }

    fn is_fixed(&self, name: &str) -> bool {
        self.fixed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    /// The host's first load, as one change: the plugins of the
    /// configuration (`grants` holds theirs, in order; not removable here)
    /// and the installed ones, admitted and loaded by `first` (started
    /// before the host had a gate). Each is admitted by its signature
    /// first; two plugins of one name, or tools of one name, are refused
    /// naming both, and nothing is registered. Their tools are then
    /// registered from the signed manifests and `listed` is told, while
    /// the code is loaded (see [`crate::pending`]; the configured plugins
    /// first, in their order, but one a call waits for next). Admin
    /// changes wait until it ends. The first load that fails is the error.
    pub(crate) async fn load_initial(
        &self,
        first: FirstLoad,
        grants: Vec<Grants>,
        listed: impl FnOnce(),
    ) -> Result<(), crate::ServerError> {
        let _one = self.changing.lock().await;
        let FirstLoad {
            admitted,
            mut loaded,
            done,
        } = first;
        let (admitted, order) = admitted.await.map_err(|_| {
            crate::ServerError::FirstLoad("admission ended without an answer".into())
        })??;
        let mut configured = grants.into_iter();
        let mut names = BTreeSet::new();
        let mut fills = Vec::new();
        let mut registrations = Vec::new();
        for (i, a) in admitted.iter().enumerate() {
            let name = &a.manifest.plugin.name;
            let grants = if a.fixed {
                let grants = configured.next().unwrap_or_default();
                crate::host::log_gap(&a.manifest, &grants);
                names.insert(name.clone());
                grants
            } else {
                self.grants.of(name)
            };
            let hurry = order.clone();
            let (backend, fill) = crate::pending::pending(&a.manifest, move || {
                hurry.first(i);
            });
            let r = registration_of(&a.manifest, &a.path, Arc::new(backend), grants);
            registrations.push((r.owner.clone(), Some(r)));
            fills.push(fill);
        }
        self.gate.replace(registrations)?;
        *self.fixed.lock().unwrap_or_else(PoisonError::into_inner) = names.clone();
        listed();
        while let Some((i, result)) = loaded.recv().await {
            if let Some(fill) = fills.get(i) {
                match result {
                    Ok(plugin) => fill.loaded(plugin),
                    Err(reason) => fill.failed(reason),
                }
            }
        }
        let loaded = done
            .await
            .map_err(|e| crate::ServerError::FirstLoad(e.to_string()))?;
        for c in loaded {
            let c = c?;
            if !names.contains(c.name()) {
                tracing::info!(
                    plugin = c.name(), digest = %c.admission.digest,
                    origin = ?c.plugin.origin(), "installed plugin loaded"
                );
            }
        }
        Ok(())
    }

    /// Installs (recorded in the registry) or loads (a watched file)
    /// every component of `source`, as one change.
    /// Returns the outcome and the names of the plugins added.
    pub async fn add(&self, source: &Path, via: Via) -> Result<(Value, Vec<String>), AdminError> {
        self.add_at(source, via, None).await
    }

    /// Installs another replica's install of `source`, made at
    /// `installed_at` (seconds since the Unix epoch).
    pub(crate) async fn add_replicated(
        &self,
        source: &Path,
        installed_at: u64,
    ) -> Result<(Value, Vec<String>), AdminError> {
        self.add_at(source, Via::Replica, Some(installed_at)).await
    }

    async fn add_at(
        &self,
        source: &Path,
        via: Via,
        installed_at: Option<u64>,
    ) -> Result<(Value, Vec<String>), AdminError> {
        let persist = via != Via::Watch;
        self.loaded().await;
        let _one = self.changing.lock().await;
        let mut candidates: Vec<Candidate> = Vec::new();
        let failed = |e: warden_registry::RegistryError| AdminError::Refused(e.to_string());
        for file in component_files(source).map_err(failed)? {
            candidates.push(self.registry.prepare(&file).await.map_err(failed)?);
        }
        if let Some(name) = candidates
            .iter()
            .map(Candidate::name)
            .find(|n| self.is_fixed(n))
        {
            return Err(AdminError::Refused(format!(
                "plugin `{name}` is loaded from the config file; change it there"
            )));
        }
        if persist {
            self.registry.check_conflicts(&candidates).map_err(failed)?;
        }
        let changes: Vec<(String, Option<Registration>)> = candidates
            .iter()
            .map(|c| {
                let grants = self.grants.of(c.name());
                (c.name().to_owned(), Some(registration(&c.plugin, grants)))
            })
            .collect();
        self.gate
            .check_replace(changes.clone())
            .map_err(|e| AdminError::Refused(format!("{e} (nothing changed)")))?;
        let mut installed = Vec::new();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if via == Via::Admin
            && let Some(store) = &self.shared
        {
            for c in &candidates {
                crate::plugin_sync::publish(store, c, now).map_err(|e| {
                    AdminError::failed("recording the install for every replica", e)
                })?;
            }
        }
        if persist {
            let at = installed_at.unwrap_or(now);
            for c in &candidates {
                installed.push(
                    self.registry
                        .commit_at(c, at)
                        .map_err(|e| AdminError::failed("recording the install", e))?,
                );
            }
        }
        let change = self
            .gate
            .replace(changes)
            .map_err(|e| AdminError::Refused(e.to_string()))?;
        for c in &candidates {
            tracing::info!(
                plugin = c.name(), digest = %c.admission.digest,
                publisher = c.admission.signer.as_ref().map(|s| s.publisher.as_str()),
                origin = ?c.plugin.origin(), path = %c.path.display(),
                "plugin loaded"
            );
        }
        self.server.tools_changed().await;
        let names = candidates.iter().map(|c| c.name().to_owned()).collect();
        Ok((
            json!({ "installed": installed, "tools": describe(&change) }),
            names,
        ))
    }

    /// Removes plugin `name` from the server (and from the registry when
    /// it was installed there, unless it was a watched file; and first
    /// from the deployment's plugins when an operator removes it).
    pub async fn remove(&self, name: &str, via: Via) -> Result<Value, AdminError> {
        let from_registry = via != Via::Watch;
        self.loaded().await;
        let _one = self.changing.lock().await;
        if self.is_fixed(name) {
            return Err(AdminError::Refused(format!(
                "plugin `{name}` is loaded from the config file; change it there"
            )));
        }
        if !self.is_loaded(name) {
            return Err(AdminError::Refused(format!(
                "no plugin named `{name}` is loaded"
            )));
        }
        let registry = |e| AdminError::failed("the plugin registry", e);
        if via == Via::Admin
            && let Some(store) = &self.shared
        {
            crate::plugin_sync::withdraw(store, name)
                .map_err(|e| AdminError::failed("recording the removal for every replica", e))?;
        }
        if from_registry
            && self
                .registry
                .list()
                .map_err(registry)?
                .iter()
                .any(|p| p.name == name)
        {
            self.registry.remove(name).map_err(registry)?;
        }
        let change = self
            .gate
            .replace(vec![(name.to_owned(), None)])
            .map_err(|e| AdminError::Refused(e.to_string()))?;
        tracing::info!(plugin = name, "plugin removed");
        self.server.tools_changed().await;
        Ok(json!({ "removed": name, "tools": describe(&change) }))
    }

    fn watched(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, String>> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Polls `dir` every `every` until `shutdown`, loading new or changed
    /// components and removing those whose file went away. A component
    /// that fails to load is reported and the previous version keeps
    /// serving.
    pub async fn watch(
        self: Arc<Self>,
        dir: PathBuf,
        every: Duration,
        shutdown: CancellationToken,
    ) {
        let mut watcher = DirWatcher::new(&dir);
        loop {
            for event in watcher.scan() {
                match event {
                    WatchEvent::Changed(path) => match self.add(&path, Via::Watch).await {
                        Ok((_, names)) => {
                            let Some(name) = names.into_iter().next() else {
                                continue;
                            };
                            let before = self.watched().insert(path, name.clone());
                            // The file now holds another plugin: the old one goes.
                            if let Some(old) = before.filter(|old| *old != name)
                                && let Err(e) = self.remove(&old, Via::Watch).await
                            {
                                tracing::error!(plugin = %old, error = %e, "removing a replaced watched plugin failed");
                            }
                        }
                        Err(e) => tracing::error!(
                            path = %path.display(), error = %e,
                            "a watched plugin did not load; the previous version keeps serving"
                        ),
                    },
                    WatchEvent::Removed(path) => {
                        let name = self.watched().remove(&path);
                        if let Some(name) = name
                            && let Err(e) = self.remove(&name, Via::Watch).await
                        {
                            tracing::error!(plugin = %name, error = %e, "removing a watched plugin failed");
                        }
                    }
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    }
}

impl PluginAdmin for LivePlugins {
    fn list(&self) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            self.loaded().await;
            let installed = self
                .registry
                .list()
                .map_err(|e| AdminError::failed("the plugin registry", e))?;
            Ok(json!({
                "installed": installed,
                "loaded": self.gate.owners(),
                "insecure_allow_unsigned": self.registry.policy().insecure_allow_unsigned,
            }))
        })
    }

    fn install(&self, path: PathBuf) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move { self.add(&path, Via::Admin).await.map(|(v, _)| v) })
    }

    fn remove(&self, name: String, by: Attribution) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            let removed = LivePlugins::remove(self, &name, Via::Admin).await?;
            self.journal
                .audit(&AuditEvent::PluginRemoved { name, by })
                .map_err(|e| {
                    tracing::error!(error = %e, "a plugin removal was not audited");
                    AdminError::failed(
                        "the plugin was removed, but the audit log could not record it",
                        e,
                    )
                })?;
            Ok(removed)
        })
    }
}
