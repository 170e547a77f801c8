//! Plugins of a state directory while no server runs: the same operations
//! the admin API offers a running one, on the registry directly (the
//! next start loads them), with removals audited in the state database.
//! With a store replicas share, installs and removals are recorded in
//! the deployment's plugins first, as a running replica records them
//! (`plugin_sync.rs`).

use std::path::PathBuf;

use serde_json::{Value, json};
use warden_api::{AdminError, Attribution, AuditEvent, BoxFuture, PluginAdmin};
use warden_registry::Registry;

use crate::{HostOptions, ServerError, state};

/// The installed plugins of one state directory.
pub struct OfflinePlugins {
    registry: Registry,
    state_dir: PathBuf,
    state: crate::config::StateConfig,
}

impl std::fmt::Debug for OfflinePlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfflinePlugins")
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

impl OfflinePlugins {
    /// The registry of `options`' state directory, admitting what its
    /// signers admit.
    pub fn open(options: &HostOptions) -> Result<OfflinePlugins, ServerError> {
        Ok(OfflinePlugins {
            registry: Registry::open(&options.state_dir, options.admission()?, options.runtime()?)?,
            state_dir: options.state_dir.clone(),
            state: options.config.state.clone(),
        })
    }
}

impl OfflinePlugins {
    fn store(&self) -> Result<std::sync::Arc<dyn warden_store::Store>, AdminError> {
        state::open(&self.state_dir, &self.state)
            .map_err(|e| AdminError::failed("opening the state database", e))
    }

    /// The store, when replicas share it (`[state] url`).
    fn shared(&self) -> Result<Option<std::sync::Arc<dyn warden_store::Store>>, AdminError> {
        if self.state.url.is_none() {
            return Ok(None);
        }
        let store = self.store()?;
        Ok(store.shared().then_some(store))
    }
}

fn registry(e: warden_registry::RegistryError) -> AdminError {
    AdminError::Refused(e.to_string())
}

impl PluginAdmin for OfflinePlugins {
    fn list(&self) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            Ok(json!({
                "installed": self.registry.list().map_err(registry)?,
                "insecure_allow_unsigned": self.registry.policy().insecure_allow_unsigned,
            }))
        })
    }

    fn install(&self, path: PathBuf) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            let candidates = self.registry.prepare_all(&path).await.map_err(registry)?;
            self.registry
                .check_conflicts(&candidates)
                .map_err(registry)?;
            if let Some(store) = self.shared()? {
                let now = warden_store::now_ms() / 1000;
                for c in &candidates {
                    crate::plugin_sync::publish(&store, c, now).map_err(|e| {
                        AdminError::failed("recording the install for every replica", e)
                    })?;
                }
            }
            let installed = candidates
                .iter()
                .map(|c| self.registry.commit(c))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| AdminError::failed("recording the install", e))?;
            Ok(json!({ "installed": installed }))
        })
    }

    fn remove(&self, name: String, by: Attribution) -> BoxFuture<'_, Result<Value, AdminError>> {
        Box::pin(async move {
            if !self
                .registry
                .list()
                .map_err(registry)?
                .iter()
                .any(|p| p.name == name)
            {
                return Err(registry(warden_registry::RegistryError::NotInstalled {
                    name: name.clone(),
                }));
            }
            let store = self.store()?;
            if store.shared() {
                crate::plugin_sync::withdraw(&store, &name).map_err(|e| {
                    AdminError::failed("recording the removal for every replica", e)
                })?;
            }
            let gone = self.registry.remove(&name).map_err(registry)?;
            store
                .append(&AuditEvent::PluginRemoved { name, by })
                .map_err(|e| {
                    AdminError::failed(
                        "the plugin was removed, but the audit log could not record it",
                        e,
                    )
                })?;
            Ok(json!({ "removed": gone }))
        })
    }
}
