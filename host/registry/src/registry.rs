//! The registry: admit, load, store, list and remove plugins.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use warden_runtime::{Plugin, Runtime};

use crate::admitted::{Admitted, Code, LoadOrder, admit_files, in_order, load_admitted};
use crate::memo::AdmissionMemo;
use crate::store::{Installed, Store};
use crate::{Admission, AdmissionPolicy, RegistryError};

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
    pub(crate) code: Code,
    pub(crate) signature: Option<String>,
}

impl Candidate {
    pub fn name(&self) -> &str {
        self.plugin.name()
    }

    /// The component's bytes and its signature's text, as admitted (read
    /// again, and checked against the admitted digest, when the admission
    /// came from the memo).
    pub fn files(&self) -> Result<(Cow<'_, [u8]>, Option<&str>), RegistryError> {
        let bytes = self.code.bytes(&self.path, &self.admission.digest)?;
        Ok((bytes, self.signature.as_deref()))
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

    /// Records an admitted candidate as installed now (replacing a plugin
    /// of the same name).
    pub fn commit(&self, candidate: &Candidate) -> Result<Installed, RegistryError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.commit_at(candidate, now)
    }

    /// [`Registry::commit`] of an install made at `installed_at` (seconds
    /// since the Unix epoch), such as another replica's.
    pub fn commit_at(
        &self,
        candidate: &Candidate,
        installed_at: u64,
    ) -> Result<Installed, RegistryError> {
        let entry = Registry::entry_of(candidate, installed_at);
        let (bytes, signature) = candidate.files()?;
        self.store.put(entry.clone(), &bytes, signature)?;
        Ok(entry)
    }

    /// What the registry records of `candidate` installed at
    /// `installed_at`.
    pub fn entry_of(candidate: &Candidate, installed_at: u64) -> Installed {
        Installed {
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
        }
    }

    pub fn remove(&self, name: &str) -> Result<Installed, RegistryError> {
        self.store.remove(name)
    }

    /// The stored component of an installed plugin and its signature's
    /// text (`None`: installed unsigned).
    pub fn stored_files(
        &self,
        entry: &Installed,
    ) -> Result<(Vec<u8>, Option<String>), RegistryError> {
        let blob = self.store.blob(&entry.digest);
        let bytes = std::fs::read(&blob).map_err(|e| RegistryError::store(&blob, e))?;
        let sig = crate::signature_path(&blob);
        let signature = match std::fs::read_to_string(&sig) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(RegistryError::store(&sig, e)),
        };
        Ok((bytes, signature))
    }

    /// Admits every installed plugin again from its stored bytes (a key
    /// or digest revoked since, or a blob changed at rest, is refused),
    /// in the order of the index; nothing is loaded yet.
    pub async fn admit_installed(
        &self,
        memo: Option<Arc<AdmissionMemo>>,
    ) -> Result<Vec<Admitted>, RegistryError> {
        let entries = self.list()?;
        let blobs = entries.iter().map(|e| self.store.blob(&e.digest)).collect();
        let admitted = admit_files(&self.policy, blobs, memo).await;
        let mut out = Vec::new();
        for (entry, admitted) in entries.iter().zip(admitted) {
            let admitted = admitted?;
            if admitted.admission.digest != entry.digest {
                return Err(RegistryError::store(
                    &admitted.path,
                    format!(
                        "installed plugin `{}` changed on disk: its digest is now {}",
                        entry.name, admitted.admission.digest
                    ),
                ));
            }
            out.push(admitted);
        }
        Ok(out)
    }

    /// [`Registry::admit_installed`], then loads them all (compiled forms
    /// come from the compile cache); the first failure stops it.
    pub async fn load_installed(&self) -> Result<Vec<Candidate>, RegistryError> {
        let admitted = self.admit_installed(None).await?;
        let order = LoadOrder::new(admitted.len());
        load_admitted(&self.runtime, admitted, order, |_, _| {})
            .await
            .into_iter()
            .collect()
    }
}

/// [`load_file`] for each of `paths` (see [`load_admitted`] for how they
/// share the cores). The results come in the order of `paths`.
pub async fn load_files(
    runtime: &Runtime,
    policy: &AdmissionPolicy,
    paths: Vec<PathBuf>,
) -> Vec<Result<Candidate, RegistryError>> {
    let (runtime, policy) = (runtime.clone(), policy.clone());
    let items = paths.into_iter().map(|p| (p.clone(), p)).collect();
    in_order(
        items,
        move |path| tokio::runtime::Handle::current().block_on(load_file(&runtime, &policy, &path)),
        |_, _| {},
    )
    .await
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
    Admitted::read(policy, path)?.load(runtime).await
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
