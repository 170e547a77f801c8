//! Admitting an unchanged plugin file again without hashing it again.
//!
//! Every start admits every plugin before any tool is listed, and a full
//! admission reads each component whole and hashes it (SHA-256: about
//! 1 ms per MB on a 2-core VM, plus a page fault per 4 KiB read into).
//! Most starts admit exactly the files the last one did. The memo keeps,
//! per file, what the last full admission found (the plugin digest and
//! the manifest section) beside the file's identity: device, inode,
//! size, modification and change times. An admission of a file whose
//! identity is the same takes the digest and manifest from the memo; the
//! signature is checked against the operator's current signers as
//! always. Nothing else of admission is skipped.
//!
//! Attacks, and what stops each:
//! - A forged or edited memo (another digest, or a manifest with other
//!   tools, categories or requests): each entry carries an HMAC, under a
//!   key derived from the host key, over its path, identity, digest and
//!   manifest. An entry that fails it is ignored and the file is hashed.
//! - A file changed after it was memoised, its modification time set
//!   back (`touch -d`), or another file renamed onto its path: the change
//!   time (ctime) moves on every write, rename and permission change,
//!   only the kernel sets it, and a new file has another inode. The
//!   identity differs, so the file is hashed.
//! - A write within the same clock tick as the identity was read (file
//!   times are coarse): a file is memoised only when its change time is
//!   at least [`SETTLED`] old, so any later write has a later ctime.
//! - A signer removed or a digest revoked since: not memoised; the
//!   signature check runs at every admission.
//!
//! What a memoised admission loads is the compile cache's entry for its
//! digest, which only a full admission of those bytes put there. Should
//! the cache have none, the file is read, and its bytes load only if
//! they still have the memoised digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::RegistryError;
use crate::fsutil::write_private;

/// How old a file's change time must be before its admission is memoised.
pub const SETTLED: Duration = Duration::from_secs(2);

/// The memo format this build reads and writes.
const VERSION: u32 = 1;

/// How many files the memo remembers at most (the most recent).
const MAX_ENTRIES: usize = 1024;

/// What identifies a file's contents without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    /// Seconds and nanoseconds.
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    pub fn of(meta: &std::fs::Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt as _;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file last changed at least `settled` before `now`.
    fn settled(&self, now: SystemTime, settled: Duration) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.ctime;
        let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else {
            return false;
        };
        Duration::new(secs, nanos)
            .checked_add(settled)
            .is_some_and(|due| due <= now)
    }
}

/// What a full admission of a file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub digest: String,
    /// The `warden:manifest` section, as the digest covers it.
    pub section: Vec<u8>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: PathBuf,
    identity: Identity,
    digest: String,
    manifest: String,
    /// HMAC-SHA256 (hex) of the fields above.
    tag: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    entries: Vec<Entry>,
}

#[derive(Debug, Default)]
struct Entries {
    by_path: BTreeMap<PathBuf, Entry>,
    changed: bool,
}

/// The admissions of one state directory (`STATE/plugins/admitted.json`).
pub struct AdmissionMemo {
    file: PathBuf,
    key: [u8; 32],
    settled: Duration,
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for AdmissionMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionMemo")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl AdmissionMemo {
    /// The memo at `file`, authenticated with `key`. A missing, unreadable
    /// or malformed memo is an empty one (every file is then hashed, as
    /// without a memo); it is rewritten at the next [`AdmissionMemo::save`].
    pub fn open(file: PathBuf, key: [u8; 32]) -> AdmissionMemo {
        let read = std::fs::read(&file)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<File>(&b).map_err(|e| e.to_string()));
        let entries = match read {
            Ok(f) if f.version == VERSION => f.entries,
            Ok(f) => {
                tracing::debug!(file = %file.display(), version = f.version, "admission memo of another version; starting a new one");
                Vec::new()
            }
            Err(e) => {
                if file.exists() {
                    tracing::warn!(file = %file.display(), error = %e, "unreadable admission memo; every plugin is hashed and the memo rewritten");
                }
                Vec::new()
            }
        };
        let by_path = entries.into_iter().map(|e| (e.path.clone(), e)).collect();
        AdmissionMemo {
            file,
            key,
            settled: SETTLED,
            entries: Mutex::new(Entries {
                by_path,
                changed: false,
            }),
        }
    }

    /// This memo, memoising files whose change time is `settled` old
    /// (tests).
    #[must_use]
    pub fn with_settled(mut self, settled: Duration) -> AdmissionMemo {
        self.settled = settled;
        self
    }

    /// What the last full admission of `path` found, if the file still
    /// has `identity` and the entry is authentic.
    pub fn recall(&self, path: &Path, identity: &Identity) -> Option<Known> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = entries.by_path.get(path)?;
        if entry.identity != *identity {
            return None;
        }
        let tag = hex::decode(&entry.tag).ok()?;
        let message = message(path, identity, &entry.digest, &entry.manifest);
        if !warden_signing::verify_hmac_sha256(&self.key, &message, &tag) {
            tracing::warn!(path = %path.display(), "admission memo entry fails its check; hashing the file");
            return None;
        }
        Some(Known {
            digest: entry.digest.clone(),
            section: entry.manifest.clone().into_bytes(),
        })
    }

    /// Records a full admission of `path` (which had `identity` before it
    /// was read and after it was hashed), unless the file changed too
    /// recently at `now` to be told apart from a later change.
    pub fn remember(&self, path: &Path, identity: &Identity, known: &Known, now: SystemTime) {
        if !identity.settled(now, self.settled) {
            return;
        }
        let Ok(manifest) = std::str::from_utf8(&known.section) else {
            return;
        };
        let message = message(path, identity, &known.digest, manifest);
        let entry = Entry {
            path: path.to_path_buf(),
            identity: *identity,
            digest: known.digest.clone(),
            manifest: manifest.to_owned(),
            tag: hex::encode(warden_signing::hmac_sha256(&self.key, &message)),
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let same = entries
            .by_path
            .get(path)
            .is_some_and(|e| e.identity == entry.identity && e.tag == entry.tag);
        if !same {
            entries.by_path.insert(path.to_path_buf(), entry);
            entries.changed = true;
        }
    }

    /// Writes the memo if anything was remembered since it was read,
    /// keeping the entries of files that still exist.
    pub fn save(&self) -> Result<(), RegistryError> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if !entries.changed {
            return Ok(());
        }
        entries.by_path.retain(|path, _| path.exists());
        let mut kept: Vec<Entry> = entries.by_path.values().cloned().collect();
        if kept.len() > MAX_ENTRIES {
            kept.sort_by_key(|e| std::cmp::Reverse(e.identity.ctime));
            kept.truncate(MAX_ENTRIES);
        }
        let file = File {
            version: VERSION,
            entries: kept,
        };
        let bytes = serde_json::to_vec(&file).map_err(|e| RegistryError::store(&self.file, e))?;
        write_private(&self.file, &bytes)?;
        entries.changed = false;
        Ok(())
    }
}

/// What an entry's tag covers: every field, each length-prefixed.
fn message(path: &Path, identity: &Identity, digest: &str, manifest: &str) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt as _;
    // Numbers and a pair of them: always serialises.
    let identity = serde_json::to_vec(identity).unwrap_or_default();
    let mut message = b"warden-admission-memo-v1\0".to_vec();
    for part in [
        path.as_os_str().as_bytes(),
        &identity,
        digest.as_bytes(),
        manifest.as_bytes(),
    ] {
        message.extend_from_slice(&(part.len() as u64).to_le_bytes());
        message.extend_from_slice(part);
    }
    message
}

#[cfg(test)]
mod tests;
