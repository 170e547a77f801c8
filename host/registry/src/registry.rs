//! The registry: admit, load, store, list and remove plugins.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use warden_runtime::{Plugin, Runtime};

use crate::store::{Installed, Store};
use crate::{Admission, AdmissionPolicy, RegistryError, read_signature};

/// Installed plugins under a state directory, loaded through one runtime
/// and admitted by one policy.
#[derive(Debug, Clone)]
pub struct Registry {
    store: Store,
    policy: AdmissionPolicy,
    runtime: Runtime,
}

/// A component that was admitted and loaded but not yet installed.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub path: PathBuf,
    pub plugin: Plugin,
    pub admission: Admission,
    bytes: Vec<u8>,
    signature: Option<String>,
}

impl Candidate {
    pub fn name(&self) -> &str {
        self.plugin.name()
    }

    pub fn tools(&self) -> Vec<String> {
        self.plugin
            .manifest()
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }
}

impl Registry {
    /// Opens (creating) `STATE/plugins`.
    pub fn open(
        state_dir: &Path,
        policy: AdmissionPolicy,
        runtime: Runtime,
    ) -> Result<Registry, RegistryError> {
        Ok(Registry {
            store: Store::open(&state_dir.join("plugins"))?,
            policy,
            runtime,
        })
    }

    pub fn policy(&self) -> &AdmissionPolicy {
        &self.policy
    }

    pub fn list(&self) -> Result<Vec<Installed>, RegistryError> {
        self.store.list()
    }

    /// Reads one component file and its signature, admits them, and loads
    /// the component (see [`load_file`]).
    pub async fn prepare(&self, path: &Path) -> Result<Candidate, RegistryError> {
        load_file(&self.runtime, &self.policy, path).await
    }

    /// [`Registry::prepare`] for every component of a file or directory
    /// ([`component_files`]); the first failure (in file order) stops it.
    pub async fn prepare_all(&self, source: &Path) -> Result<Vec<Candidate>, RegistryError> {
        load_files(&self.runtime, &self.policy, component_files(source)?)
            .await
            .into_iter()
            .collect()
    }

    /// Fails when a tool of `candidates` is exported by another installed
    /// plugin (one of another name) or by another candidate.
    pub fn check_conflicts(&self, candidates: &[Candidate]) -> Result<(), RegistryError> {
        let replacing: Vec<&str> = candidates.iter().map(Candidate::name).collect();
        let mut taken: Vec<(String, String)> = self
            .list()?
            .into_iter()
            .filter(|p| !replacing.contains(&p.name.as_str()))
            .flat_map(|p| p.tools.into_iter().map(move |t| (t, p.name.clone())))
            .collect();
        for c in candidates {
            for tool in c.tools() {
                if let Some((_, other)) = taken.iter().find(|(t, _)| *t == tool) {
                    return Err(RegistryError::Conflict {
                        path: c.path.clone(),
                        tool,
                        other: other.clone(),
                    });
                }
                taken.push((tool, c.name().to_owned()));
            }
        }
        Ok(())
    }

    /// Records an admitted candidate as installed (replacing a plugin of
    /// the same name).
    pub fn commit(&self, candidate: &Candidate) -> Result<Installed, RegistryError> {
        let installed_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let entry = Installed {
            name: candidate.name().to_owned(),
            version: candidate.plugin.manifest().plugin.version.clone(),
            digest: candidate.admission.digest.clone(),
            publisher: candidate
                .admission
                .signer
                .as_ref()
                .map(|s| s.publisher.clone()),
            key_id: candidate
                .admission
                .signer
                .as_ref()
                .map(|s| s.key_id.clone()),
            tools: candidate.tools(),
            installed_at,
        };
        self.store.put(
            entry.clone(),
            &candidate.bytes,
            candidate.signature.as_deref(),
        )?;
        Ok(entry)
    }

    pub fn remove(&self, name: &str) -> Result<Installed, RegistryError> {
        self.store.remove(name)
    }

    /// Loads every installed plugin from its stored bytes, admitting each
    /// again (a key or digest revoked since, or a blob changed at rest, is
    /// refused). Compiled forms come from the compile cache.
    pub async fn load_installed(&self) -> Result<Vec<Candidate>, RegistryError> {
        let entries = self.list()?;
        let blobs = entries.iter().map(|e| self.store.blob(&e.digest)).collect();
        let loaded = load_files(&self.runtime, &self.policy, blobs).await;
        let mut out = Vec::new();
        for (entry, candidate) in entries.iter().zip(loaded) {
            let candidate = candidate?;
            let blob = &candidate.path;
            if candidate.admission.digest != entry.digest {
                return Err(RegistryError::store(
                    blob,
                    format!(
                        "installed plugin `{}` changed on disk: its digest is now {}",
                        entry.name, candidate.admission.digest
                    ),
                ));
            }
            out.push(candidate);
        }
        Ok(out)
    }
}

/// [`load_file`] for each of `paths`, concurrently on the blocking pool
/// (each admission and load is CPU work: hashing, signature checks,
/// deserialising; they share the cores and leave the async workers
/// free). The results come in the order of `paths`.
pub async fn load_files(
    runtime: &Runtime,
    policy: &AdmissionPolicy,
    paths: Vec<PathBuf>,
) -> Vec<Result<Candidate, RegistryError>> {
    let tasks: Vec<_> = paths
        .into_iter()
        .map(|path| {
            let (runtime, policy, at) = (runtime.clone(), policy.clone(), path.clone());
            // On the blocking pool: the protocol and the admin API keep
            // their worker threads while components deserialise.
            let task = tokio::task::spawn_blocking(move || {
                tokio::runtime::Handle::current()
                    .block_on(async move { load_file(&runtime, &policy, &path).await })
            });
            (at, task)
        })
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for (path, task) in tasks {
        out.push(task.await.unwrap_or_else(|e| {
            Err(RegistryError::Store {
                path,
                message: format!("loading stopped before it finished: {e}"),
            })
        }));
    }
    out
}

/// Reads one component file and its signature, admits them under
/// `policy`, and loads the component (compiling it, or from the compile
/// cache). The loaded plugin is built from exactly the bytes that were
/// checked, and nothing of it runs before the check passes.
pub async fn load_file(
    runtime: &Runtime,
    policy: &AdmissionPolicy,
    path: &Path,
) -> Result<Candidate, RegistryError> {
    let (bytes, admission) = policy.admit_file(path)?;
    let signature = read_signature(path)?.map(|s| s.to_text());
    let plugin = runtime
        .load_admitted(path, &bytes, &admission.digest)
        .await
        .map_err(|source| RegistryError::Load {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(Candidate {
        path: path.to_path_buf(),
        plugin,
        admission,
        bytes,
        signature,
    })
}

/// The component files a source names: the file itself, or every `.wasm`
/// in a directory (sorted).
pub fn component_files(source: &Path) -> Result<Vec<PathBuf>, RegistryError> {
    if !source.is_dir() {
        return Ok(vec![source.to_path_buf()]);
    }
    let entries = std::fs::read_dir(source).map_err(|e| RegistryError::Read {
        path: source.to_path_buf(),
        source: e,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(RegistryError::EmptyDir {
            dir: source.to_path_buf(),
        });
    }
    Ok(files)
}
