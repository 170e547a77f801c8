//! The on-disk compile cache: compiled components keyed by the component's
//! digest and the engine's compatibility fingerprint, so a second load of
//! the same bytes on the same engine settings deserialises instead of
//! compiling.
//!
//! Attack: deserialising an entry runs native code from it, so anyone who
//! can write a cache file — a tool granted a directory that holds it,
//! another local user, a copied-in state directory — could otherwise have
//! the host execute code of their choosing. Every entry carries a keyed
//! BLAKE3 tag (`warden_signing::BulkMac`), under a key derived from the
//! host key, over its name and its bytes; an entry is read once, into a sealed memory file on Linux
//! (`sealed.rs`) and into memory elsewhere, its tag checked over that copy,
//! and only that copy deserialised. A changed, truncated, renamed or foreign entry
//! is logged, removed and recompiled, never loaded. Without a key there is
//! no cache. The directory is owner-only (0700) and its files 0600, also
//! when they existed with wider modes. Files are written to a temporary
//! name and renamed, so a killed host never leaves a half-written entry
//! under a real key.
//!
//! An entry is put only after its component passed the load check
//! (`tools()` against the manifest), and a load from the cache skips
//! that check: the tag says this host checked exactly these
//! bytes, whose digest covers the manifest. A component that fails the
//! check is never cached, so it is refused on every load.
//!
//! Entries do not pile up: a load that uses one marks it used (its
//! modification time), and [`CompileCache::sweep`] removes entries no load
//! used for [`UNUSED_FOR`] (replaced plugins, older engine settings) and
//! temporary files of writes that never ended.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::RuntimeError;

#[cfg(target_os = "linux")]
mod sealed;

/// The tag's length at the start of every entry.
const TAG_LEN: usize = warden_signing::BulkMac::TAG_LEN;

/// How long an entry may go unused before [`CompileCache::sweep`] removes
/// it (it is recompiled if it is ever needed again).
pub const UNUSED_FOR: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// A temporary file this old was left by a write that never ended (a
/// killed host); writing an entry takes well under a second.
const ABANDONED_AFTER: Duration = Duration::from_secs(60 * 60);

/// What a sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub files: usize,
    pub bytes: u64,
}

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
        // `b3`: tagged with keyed BLAKE3. `c1`: put only after the
        // component passed the load checks (`Plugin::cross_check`), which
        // a load from the cache then skips; bump it when those checks
        // change, so every component is checked again. Entries of older
        // schemes are never read again, and a sweep removes them.
        format!("{hex}-{}-b3c1.cwasm", self.fingerprint)
    }

    /// A MAC over what an entry's tag covers, started with the entry's
    /// name (so an entry moved under another component's name is
    /// refused) and a separator; the compiled bytes follow.
    fn mac(&self, name: &str) -> warden_signing::BulkMac {
        let mut mac = warden_signing::BulkMac::new(&self.key.0);
        mac.update(name.as_bytes());
        mac.update(&[0]);
        mac
    }

    /// The cached compilation of `digest`, if present, authentic and
    /// loadable. Anything else is removed and reported as absent.
    pub fn get(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let name = self.name(digest);
        let path = self.dir.join(&name);
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read a compile cache entry; recompiling");
                return None;
            }
        };
        let mut tag = [0u8; TAG_LEN];
        let read = match file.read_exact(&mut tag) {
            Ok(()) => load(engine, &mut file, self.mac(&name), &tag),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Read::Forged,
            Err(e) => Read::Unreadable(e),
        };
        match read {
            Read::Loaded(component) => {
                // Marks the entry used, for `sweep`; failing to is harmless.
                let _ = file.set_modified(SystemTime::now());
                Some(component)
            }
            Read::Unreadable(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read a compile cache entry; recompiling");
                None
            }
            Read::Forged => {
                tracing::warn!(
                    path = %path.display(),
                    "compile cache entry failed authentication (changed, or not written by this host); \
                     discarding it and recompiling"
                );
                let _ = std::fs::remove_file(&path);
                None
            }
            Read::Unusable(e) => {
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
            let mut mac = self.mac(&name);
            mac.update(&bytes);
            let tag = mac.finalize();
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

impl CompileCache {
    /// Removes the entries no load used for [`UNUSED_FOR`] before `now`
    /// (whatever engine settings they were compiled for) and temporary
    /// files left by writes that never ended; leaves every other file.
    /// A file that cannot be read or removed is logged and skipped.
    pub fn sweep(&self, now: SystemTime) -> Swept {
        let mut swept = Swept::default();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot sweep the compile cache");
                return swept;
            }
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let limit = if name.ends_with(".cwasm") {
                UNUSED_FOR
            } else if name.starts_with(".tmp") {
                ABANDONED_AFTER
            } else {
                continue;
            };
            let Ok(meta) = entry.metadata() else { continue };
            let idle = meta
                .modified()
                .ok()
                .and_then(|at| now.duration_since(at).ok());
            if !meta.is_file() || idle.is_none_or(|idle| idle < limit) {
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {
                    swept.files += 1;
                    swept.bytes += meta.len();
                }
                Err(e) => {
                    tracing::warn!(path = %entry.path().display(), error = %e, "cannot remove an unused compile cache entry");
                }
            }
        }
        swept
    }
}

/// What reading an entry came to.
enum Read {
    Loaded(Component),
    Unreadable(std::io::Error),
    /// The tag does not match: changed, truncated, or not ours.
    Forged,
    /// Authentic, but this engine cannot load it.
    Unusable(wasmtime::Error),
}

/// Reads the rest of `file` (the compiled bytes after the tag) into
/// memory, checks `tag` over them and deserialises that one copy.
fn in_memory(
    engine: &Engine,
    file: &mut std::fs::File,
    mut mac: warden_signing::BulkMac,
    tag: &[u8],
) -> Read {
    let mut bytes = Vec::new();
    if let Err(e) = file.read_to_end(&mut bytes) {
        return Read::Unreadable(e);
    }
    mac.update(&bytes);
    if bytes.is_empty() || !mac.verify(tag) {
        return Read::Forged;
    }
    // SAFETY: these bytes carry a valid tag under the host's cache key,
    // so this host produced them with `Component::serialize` on an engine
    // with the same compatibility fingerprint (it is in the name the tag
    // covers); they were read once and not re-read.
    #[expect(
        unsafe_code,
        reason = "deserialising our own authenticated compile cache"
    )]
    let loaded = unsafe { Component::deserialize(engine, &bytes) };
    loaded.map_or_else(Read::Unusable, Read::Loaded)
}

#[cfg(not(target_os = "linux"))]
use in_memory as load;
#[cfg(target_os = "linux")]
use sealed::load;

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
