//! Installed plugins on disk: each component stored by its digest
//! (`blobs/<hex>.wasm` and its `.sig`), and `index.json` naming, for each
//! plugin, the version, digest, signer and tools. Every write goes to a
//! temporary file and is renamed into place, so a killed process leaves
//! the old index or the new one, never half of either.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::RegistryError;
use crate::fsutil::write_private;

/// The index format this build reads and writes.
const INDEX_VERSION: u32 = 1;

/// One installed plugin, as `warden plugin list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Installed {
    pub name: String,
    pub version: String,
    /// `sha256:<hex>` over the component and its manifest.
    pub digest: String,
    /// The trusted publisher that signed it; `None`: admitted unsigned.
    pub publisher: Option<String>,
    pub key_id: Option<String>,
    pub tools: Vec<String>,
    /// Seconds since the Unix epoch.
    pub installed_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    version: u32,
    plugins: Vec<Installed>,
}

/// The directory `STATE/plugins`.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, RegistryError> {
        let blobs = dir.join("blobs");
        std::fs::create_dir_all(&blobs).map_err(|e| RegistryError::store(&blobs, e))?;
        restrict(dir).map_err(|e| RegistryError::store(dir, e))?;
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("index.json")
    }

    /// The component file of a digest.
    pub fn blob(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir.join("blobs").join(format!("{hex}.wasm"))
    }

    /// The installed plugins, by name. A missing index is an empty
    /// registry; an unreadable one is an error, never an empty list.
    pub fn list(&self) -> Result<Vec<Installed>, RegistryError> {
        let path = self.index_path();
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(RegistryError::store(&path, e)),
        };
        let index: Index = serde_json::from_slice(&text).map_err(|e| {
            RegistryError::store(&path, format!("the plugin index is corrupt: {e}"))
        })?;
        if index.version != INDEX_VERSION {
            return Err(RegistryError::store(
                &path,
                format!(
                    "index version {} is not the {INDEX_VERSION} this warden reads",
                    index.version
                ),
            ));
        }
        Ok(index.plugins)
    }

    /// Stores a component and its signature under its digest, then records
    /// `entry` in the index, replacing a plugin of the same name.
    pub fn put(
        &self,
        entry: Installed,
        bytes: &[u8],
        signature: Option<&str>,
    ) -> Result<(), RegistryError> {
        let blob = self.blob(&entry.digest);
        write_private(&blob, bytes)?;
        let sig = crate::signature_path(&blob);
        match signature {
            Some(text) => write_private(&sig, text.as_bytes())?,
            None => match std::fs::remove_file(&sig) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(RegistryError::store(&sig, e)),
            },
        }
        let mut plugins = self.list()?;
        plugins.retain(|p| p.name != entry.name);
        plugins.push(entry);
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
        self.write_index(plugins)?;
        self.collect_garbage()
    }

    /// Drops `name` from the index; its blob goes once nothing names it.
    pub fn remove(&self, name: &str) -> Result<Installed, RegistryError> {
        let mut plugins = self.list()?;
        let at = plugins.iter().position(|p| p.name == name).ok_or_else(|| {
            RegistryError::NotInstalled {
                name: name.to_owned(),
            }
        })?;
        let gone = plugins.remove(at);
        self.write_index(plugins)?;
        self.collect_garbage()?;
        Ok(gone)
    }

    fn write_index(&self, plugins: Vec<Installed>) -> Result<(), RegistryError> {
        let index = Index {
            version: INDEX_VERSION,
            plugins,
        };
        let path = self.index_path();
        let text = serde_json::to_vec_pretty(&index).map_err(|e| RegistryError::store(&path, e))?;
        write_private(&path, &text)
    }

    /// Removes blobs no index entry names.
    fn collect_garbage(&self) -> Result<(), RegistryError> {
        let keep: Vec<PathBuf> = self.list()?.iter().map(|p| self.blob(&p.digest)).collect();
        let blobs = self.dir.join("blobs");
        let entries = std::fs::read_dir(&blobs).map_err(|e| RegistryError::store(&blobs, e))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let component = match path.extension().and_then(|e| e.to_str()) {
                Some("wasm") => path.clone(),
                Some("sig") => path.with_extension(""),
                _ => continue,
            };
            if !keep.contains(&component) {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(())
    }
}

fn restrict(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
