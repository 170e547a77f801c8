//! Installed plugins across replicas that share a store: an operator's
//! install or removal on any replica is recorded in the deployment's
//! plugins (the store's `plugins`) before it applies there, and every
//! replica, each round, makes its own registry and tool table equal to
//! them, then tells its clients their lists changed.
//!
//! Attack: a component written straight into the shared database (or
//! swapped there) running on every replica. Nothing from the database
//! loads without passing this replica's own admission: its files are
//! checked against its detached signature and this host's trusted
//! publishers, exactly as a file an operator installs here, before any
//! of its code runs. A name the configuration or a watched directory
//! provides is never touched.
//!
//! Each name's newest change wins: a replica's own installs that the
//! deployment does not know (made before it shared the store, or with the
//! server stopped) are published, an install or removal made elsewhere
//! since is applied here. An install this replica refused (a publisher it
//! does not trust, a conflict) is reported once per digest and retried
//! only after a restart.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use warden_api::AdminError;
use warden_registry::{Admitted, Candidate, Installed, Registry};
use warden_store::{PluginFiles, SharedPlugin, Store, StoreError};

use crate::reload::{LivePlugins, Via};

/// How often a replica compares its plugins with the deployment's.
pub const SYNC_EVERY: Duration = Duration::from_secs(2);

/// Why an install could not be recorded for every replica.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PublishError {
    #[error(transparent)]
    Files(#[from] warden_registry::RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Records the install of `candidate` at `installed_at` (seconds) in the
/// deployment's plugins.
pub(crate) fn publish(
    store: &Arc<dyn Store>,
    candidate: &Candidate,
    installed_at: u64,
) -> Result<(), PublishError> {
    let (component, signature) = candidate.files()?;
    let files = PluginFiles {
        component: component.to_vec(),
        signature: signature.map(str::to_owned),
    };
    Ok(put(
        store,
        &Registry::entry_of(candidate, installed_at),
        &files,
    )?)
}

fn put(store: &Arc<dyn Store>, entry: &Installed, files: &PluginFiles) -> Result<(), StoreError> {
    // A record of strings and numbers always serialises.
    let record = serde_json::to_value(entry).unwrap_or(serde_json::Value::Null);
    store.put_shared_plugin(
        &SharedPlugin {
            name: entry.name.clone(),
            digest: Some(entry.digest.clone()),
            record,
            at_ms: entry.installed_at.saturating_mul(1000),
        },
        Some(files),
    )?;
    Ok(())
}

/// Records the removal of `name`, now, in the deployment's plugins.
pub(crate) fn withdraw(store: &Arc<dyn Store>, name: &str) -> Result<(), StoreError> {
    store.put_shared_plugin(
        &SharedPlugin {
            name: name.to_owned(),
            digest: None,
            record: serde_json::Value::Null,
            at_ms: warden_store::now_ms(),
        },
        None,
    )?;
    Ok(())
}

/// What one name needs on this replica.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// This replica's install is newer than the deployment's record.
    Publish,
    /// Install the deployment's version (digest, seconds).
    Install(String, u64),
    /// Removed elsewhere since it was installed here.
    Remove,
}

/// The step `local` (this registry's install) and `shared` (the
/// deployment's record) call for, if any.
fn step(local: Option<&Installed>, shared: Option<&SharedPlugin>) -> Option<Step> {
    let newer_here =
        |l: &Installed, s: &SharedPlugin| l.installed_at.saturating_mul(1000) > s.at_ms;
    match (local, shared) {
        (Some(_), None) => Some(Step::Publish),
        (Some(l), Some(s)) if s.digest.as_deref() == Some(l.digest.as_str()) => None,
        (Some(l), Some(s)) if newer_here(l, s) => Some(Step::Publish),
        (Some(_), Some(s)) if s.digest.is_none() => Some(Step::Remove),
        (_, Some(s)) => s.digest.clone().map(|d| Step::Install(d, s.at_ms / 1000)),
        (None, None) => None,
    }
}

/// Keeps a replica's plugins equal to the deployment's.
pub(crate) struct PluginSync {
    live: Arc<LivePlugins>,
    store: Arc<dyn Store>,
    /// Installs this replica refused, by name and digest: said once.
    refused: BTreeSet<(String, String)>,
}

impl PluginSync {
    pub(crate) fn new(live: Arc<LivePlugins>, store: Arc<dyn Store>) -> PluginSync {
        PluginSync {
            live,
            store,
            refused: BTreeSet::new(),
        }
    }

    /// One round every [`SYNC_EVERY`] (the first at once) until
    /// `shutdown`.
    pub(crate) async fn run(mut self, shutdown: CancellationToken) {
        loop {
            if let Err(e) = self.round().await {
                tracing::warn!(error = %e, "the deployment's plugins were not compared; retrying");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(SYNC_EVERY) => {}
            }
        }
    }

    /// Compares this replica's installed plugins with the deployment's
    /// and takes each step they call for.
    pub(crate) async fn round(&mut self) -> Result<(), String> {
        let shared: BTreeMap<String, SharedPlugin> = self
            .store
            .shared_plugins()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect();
        let live = self.live.clone();
        let registry = live.registry();
        let local: BTreeMap<String, Installed> = registry
            .list()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect();
        let names: BTreeSet<&String> = shared.keys().chain(local.keys()).collect();
        for name in names {
            if live.local_only(name) {
                continue;
            }
            let here = local.get(name);
            match step(here, shared.get(name)) {
                None => {}
                Some(Step::Publish) => {
                    if let Some(entry) = here {
                        self.adopt(registry, entry);
                    }
                }
                Some(Step::Install(digest, at)) => self.install(name, &digest, at).await,
                Some(Step::Remove) => {
                    let removed = if live.is_loaded(name) {
                        live.remove(name, Via::Replica)
                            .await
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    } else {
                        // Installed here but never loaded: only the record goes.
                        registry.remove(name).map(|_| ()).map_err(|e| e.to_string())
                    };
                    match removed {
                        Ok(()) => {
                            tracing::info!(plugin = %name, "plugin removed on another replica: removed here")
                        }
                        Err(e) => {
                            tracing::error!(plugin = %name, error = %e, "a plugin removed on another replica could not be removed here; retrying")
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Publishes an install of this replica's that the deployment does not
    /// know, from the registry's files.
    fn adopt(&self, registry: &Registry, entry: &Installed) {
        let published = registry
            .stored_files(entry)
            .map_err(|e| e.to_string())
            .and_then(|(component, signature)| {
                put(
                    &self.store,
                    entry,
                    &PluginFiles {
                        component,
                        signature,
                    },
                )
                .map_err(|e| e.to_string())
            });
        match published {
            Ok(()) => {
                tracing::info!(plugin = %entry.name, "plugin installed here recorded for every replica")
            }
            Err(e) => {
                tracing::error!(plugin = %entry.name, error = %e, "a plugin installed here was not recorded for the other replicas")
            }
        }
    }

    /// Installs the deployment's version of `name` here, admitted from
    /// its files as any install is.
    async fn install(&mut self, name: &str, digest: &str, installed_at: u64) {
        let key = (name.to_owned(), digest.to_owned());
        if self.refused.contains(&key) {
            return;
        }
        match self.try_install(name, digest, installed_at).await {
            Ok(true) => {
                tracing::info!(plugin = %name, %digest, "plugin installed on another replica: installed here")
            }
            // Changed again meanwhile: the next round sees the new one.
            Ok(false) => {}
            Err(Failure::Refused(e)) => {
                tracing::error!(plugin = %name, %digest, error = %e, "a plugin installed on another replica was refused here; it is not tried again until a restart");
                self.refused.insert(key);
            }
            Err(Failure::Failed(e)) => {
                tracing::warn!(plugin = %name, %digest, error = %e, "a plugin installed on another replica was not installed here yet; retrying");
            }
        }
    }

    async fn try_install(
        &self,
        name: &str,
        digest: &str,
        installed_at: u64,
    ) -> Result<bool, Failure> {
        let failed = |e: &dyn std::fmt::Display| Failure::Failed(e.to_string());
        let Some(files) = self
            .store
            .plugin_files(name, digest)
            .map_err(|e| failed(&e))?
        else {
            return Ok(false);
        };
        let dir = tempfile::tempdir().map_err(|e| failed(&e))?;
        let path = dir.path().join(format!("{name}.wasm"));
        std::fs::write(&path, &files.component).map_err(|e| failed(&e))?;
        if let Some(signature) = &files.signature {
            std::fs::write(warden_registry::signature_path(&path), signature)
                .map_err(|e| failed(&e))?;
        }
        // Admitted here, and exactly what its row says it is, before it
        // is loaded.
        let admitted = Admitted::read(self.live.registry().policy(), &path)
            .map_err(|e| Failure::Refused(e.to_string()))?;
        let (is, digest_is) = (&admitted.manifest.plugin.name, &admitted.admission.digest);
        if is != name || digest_is != digest {
            return Err(Failure::Refused(format!(
                "its row names plugin `{name}` with digest {digest}, but its component is \
                 plugin `{is}` with digest {digest_is}"
            )));
        }
        match self.live.add_replicated(&path, installed_at).await {
            Ok(_) => Ok(true),
            Err(e @ AdminError::Refused(_)) => Err(Failure::Refused(e.to_string())),
            Err(e) => Err(failed(&e)),
        }
    }
}

/// Why another replica's install did not happen here.
enum Failure {
    /// This replica will not take it (admission, a conflict): said once.
    Refused(String),
    /// It may work next round (the store, the disk).
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(digest: &str, at: u64) -> Installed {
        Installed {
            name: "fs".into(),
            version: "1".into(),
            digest: digest.into(),
            publisher: None,
            key_id: None,
            tools: vec![],
            installed_at: at,
        }
    }

    fn shared(digest: Option<&str>, at_ms: u64) -> SharedPlugin {
        SharedPlugin {
            name: "fs".into(),
            digest: digest.map(str::to_owned),
            record: serde_json::Value::Null,
            at_ms,
        }
    }

    #[test]
    fn each_name_takes_its_newest_change() {
        let l = installed("sha256:a", 10);
        assert_eq!(step(Some(&l), None), Some(Step::Publish));
        assert_eq!(
            step(Some(&l), Some(&shared(Some("sha256:a"), 10_000))),
            None
        );
        assert_eq!(
            step(Some(&l), Some(&shared(Some("sha256:a"), 99_000))),
            None
        );
        // Installed here after the deployment's record (while it was not
        // shared): this one wins.
        assert_eq!(
            step(Some(&l), Some(&shared(Some("sha256:b"), 9_000))),
            Some(Step::Publish)
        );
        assert_eq!(
            step(Some(&l), Some(&shared(None, 9_999))),
            Some(Step::Publish)
        );
        // Changed elsewhere since.
        assert_eq!(
            step(Some(&l), Some(&shared(Some("sha256:b"), 10_000))),
            Some(Step::Install("sha256:b".into(), 10))
        );
        assert_eq!(
            step(Some(&l), Some(&shared(None, 10_000))),
            Some(Step::Remove)
        );
        assert_eq!(
            step(None, Some(&shared(Some("sha256:b"), 12_345))),
            Some(Step::Install("sha256:b".into(), 12))
        );
        assert_eq!(step(None, Some(&shared(None, 1))), None);
        assert_eq!(step(None, None), None);
    }
}
