//! The on-disk compile cache: compiled components keyed by the component's
//! digest and the engine's compatibility fingerprint, so a second load of
//! the same bytes on the same engine settings deserialises instead of
//! compiling.
//!
//! Trust: deserialising runs native code from the cache, so the cache
//! directory must be writable only by the host (it is created 0700). Files
//! are written to a temporary name and renamed, so a killed host never
//! leaves a half-written entry under a real key.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::RuntimeError;

#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
    fingerprint: String,
}

impl CompileCache {
    pub fn open(dir: &Path, engine: &Engine) -> Result<CompileCache, RuntimeError> {
        let err = |source| RuntimeError::Cache {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
        }
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompileCache {
            dir: dir.to_path_buf(),
            fingerprint: format!("{:016x}", hasher.finish()),
        })
    }

    fn entry(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir.join(format!("{hex}-{}.cwasm", self.fingerprint))
    }

    /// The cached compilation of `digest`, if present and loadable. A
    /// corrupt entry is removed and reported as absent.
    pub fn get(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let path = self.entry(digest);
        if !path.is_file() {
            return None;
        }
        // SAFETY: the file was produced by `Component::serialize` on an
        // engine with the same compatibility fingerprint (it is in the
        // name), in a directory only this host can write.
        #[expect(unsafe_code, reason = "deserialising our own compile cache")]
        let loaded = unsafe { Component::deserialize_file(engine, &path) };
        match loaded {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "discarding unusable compile cache entry");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores a compilation. Failing to cache is logged, not fatal.
    pub fn put(&self, digest: &str, component: &Component) {
        let path = self.entry(digest);
        let write = || -> Result<(), String> {
            let bytes = component.serialize().map_err(|e| e.to_string())?;
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| e.to_string())?;
            tmp.write_all(&bytes).map_err(|e| e.to_string())?;
            tmp.persist(&path).map_err(|e| e.to_string())?;
            Ok(())
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), error = %e, "could not write compile cache entry");
        }
    }
}
