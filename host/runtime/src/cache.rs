//! The on-disk compile cache: compiled components keyed by the component's
//! digest and the engine's compatibility fingerprint, so a second load of
//! the same bytes on the same engine settings deserialises instead of
//! compiling.
//!
//! Attack: deserialising an entry runs native code from it, so anyone who
//! can write a cache file — a tool granted a directory that holds it,
//! another local user, a copied-in state directory — could otherwise have
//! the host execute code of their choosing. Every entry carries an
//! HMAC-SHA256 tag, under a key derived from the host key, over its name
//! and its bytes; an entry is read once into memory, its tag checked, and
//! only then deserialised. A changed, truncated, renamed or foreign entry
//! is logged, removed and recompiled, never loaded. Without a key there is
//! no cache. The directory is owner-only (0700) and its files 0600, also
//! when they existed with wider modes. Files are written to a temporary
//! name and renamed, so a killed host never leaves a half-written entry
//! under a real key.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::RuntimeError;

/// The tag's length at the start of every entry.
const TAG_LEN: usize = 32;

/// The key that authenticates cache entries (derive it from the host key,
/// e.g. `SecretKey::derive_key("compile-cache")`). Never printed.
#[derive(Clone)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    pub fn new(bytes: [u8; 32]) -> CacheKey {
        CacheKey(bytes)
    }
}

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheKey(..)")
    }
}

#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
    fingerprint: String,
    key: CacheKey,
}

impl CompileCache {
    pub fn open(dir: &Path, key: CacheKey, engine: &Engine) -> Result<CompileCache, RuntimeError> {
        let err = |source| RuntimeError::Cache {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        restrict(dir).map_err(err)?;
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompileCache {
            dir: dir.to_path_buf(),
            fingerprint: format!("{:016x}", hasher.finish()),
            key,
        })
    }

    fn name(&self, digest: &str) -> String {
        let hex = digest.trim_start_matches("sha256:");
        format!("{hex}-{}.cwasm", self.fingerprint)
    }

    fn tag(&self, name: &str, bytes: &[u8]) -> [u8; TAG_LEN] {
        warden_signing::hmac_sha256_parts(&self.key.0, &tagged(name, bytes))
    }

    /// The cached compilation of `digest`, if present, authentic and
    /// loadable. Anything else is removed and reported as absent.
    pub fn get(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let name = self.name(digest);
        let path = self.dir.join(&name);
        let entry = match std::fs::read(&path) {
            Ok(entry) => entry,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read a compile cache entry; recompiling");
                return None;
            }
        };
        let authentic = entry.len() > TAG_LEN && {
            let (tag, bytes) = entry.split_at(TAG_LEN);
            warden_signing::verify_hmac_sha256_parts(&self.key.0, &tagged(&name, bytes), tag)
        };
        if !authentic {
            tracing::warn!(
                path = %path.display(),
                "compile cache entry failed authentication (changed, or not written by this host); \
                 discarding it and recompiling"
            );
            let _ = std::fs::remove_file(&path);
            return None;
        }
        let bytes = entry.get(TAG_LEN..).unwrap_or_default();
        // SAFETY: these bytes carry a valid tag under the host's cache
        // key, so this host produced them with `Component::serialize` on
        // an engine with the same compatibility fingerprint (it is in the
        // name the tag covers); they were read once and not re-read.
        #[expect(
            unsafe_code,
            reason = "deserialising our own authenticated compile cache"
        )]
        let loaded = unsafe { Component::deserialize(engine, bytes) };
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
        let name = self.name(digest);
        let path = self.dir.join(&name);
        let write = || -> Result<(), String> {
            let bytes = component.serialize().map_err(|e| e.to_string())?;
            let tag = self.tag(&name, &bytes);
            // NamedTempFile creates the file 0600.
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| e.to_string())?;
            tmp.write_all(&tag).map_err(|e| e.to_string())?;
            tmp.write_all(&bytes).map_err(|e| e.to_string())?;
            tmp.persist(&path).map_err(|e| e.to_string())?;
            Ok(())
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), error = %e, "could not write compile cache entry");
        }
    }
}

/// What the tag covers: the entry's name (so an entry moved under another
/// component's name is refused) and the compiled bytes.
fn tagged<'a>(name: &'a str, bytes: &'a [u8]) -> [&'a [u8]; 3] {
    [name.as_bytes(), &[0], bytes]
}

/// The directory 0700 and every file in it 0600.
fn restrict(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))?;
            }
        }
    }
    Ok(())
}
