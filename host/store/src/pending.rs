//! The pending audit log: records made durable by one `write(2)` to a
//! file of their own, then committed to the chain in batches.
//!
//! Why: a call's decision record must be durable before its tool runs.
//! Under `durability = "normal"` durable means the operating system holds
//! it (it survives a killed host, not a power loss); a SQLite commit gives
//! that at the price of a transaction, a write-ahead log frame and its
//! locks, about a fifth of a served call. One append to this file gives
//! the same guarantee for the price of a system call. The records join
//! the chain with the next commit (`writer.rs`), and every commit that
//! takes records from the file stores how far into it they reach, in the
//! same transaction (table `audit_pending`). After a killed host, the
//! next open of the database commits exactly the frames past that point
//! ([`SqliteStore::recover_pending`]): none twice, none lost.
//!
//! Attack: someone who can write the state directory, but lacks the host
//! key, adding a record to a pending file so that the next open commits
//! and tags it as the host's own, or editing, reordering or splicing the
//! frames there. Every frame carries an HMAC, under a key derived from the
//! host key, of the file's name, the frame's offset and its content. An
//! open commits the frames that verify up to the first that does not; a
//! file with such a frame is kept aside (renamed `*.rejected`) and named
//! in an error, for the operator.
//!
//! A host holds a lock (`flock`) on its file while it lives, made before
//! the file takes its final name: an open commits only files nobody holds.
//! A failed write is cut back off the file; a file where that fails too
//! takes no more frames until it is replaced ([`PendingLog::write`]).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::chain::Entry;
use crate::checkpoint::Cover;
use crate::{SqliteStore, StoreError};

/// The schema version with the `audit_pending` table.
pub(crate) const PENDING_SINCE: u32 = 12;

/// A file is replaced by a fresh one once everything in it is committed
/// and it has grown past this.
pub(crate) const ROTATE_AT: u64 = 1 << 20;

/// The largest frame read back: a length past it is a broken frame.
const MAX_FRAME: usize = 64 << 20;

/// Length (4 bytes) and HMAC (32 bytes) before each frame's content.
const HEADER: usize = 4 + 32;

/// The directory of `db`'s pending files (`warden.db-pending`).
pub(crate) fn dir_for(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push("-pending");
    db.with_file_name(name)
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::PendingLog {
        path: path.to_path_buf(),
        source,
    }
}

/// This host's open pending file.
#[derive(Debug)]
pub(crate) struct PendingLog {
    dir: PathBuf,
    path: PathBuf,
    name: String,
    file: File,
    len: u64,
    /// A failed write left part of a frame that could not be cut off:
    /// nothing more is written here (a frame after the tear would not sit
    /// at the offset its tag covers), and the file is replaced once what
    /// it holds is committed.
    torn: bool,
}

impl PendingLog {
    /// A new, empty, locked file in `dir`.
    pub(crate) fn create(dir: &Path) -> Result<PendingLog, StoreError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        crate::private::private_dir(dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let stem = format!(
            "{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let name = format!("{stem}.log");
        let path = dir.join(&name);
        // Locked under a name no open reads, then renamed: an open never
        // finds this file unlocked while its host lives.
        let making = dir.join(format!("{stem}.new"));
        let mut options = OpenOptions::new();
        options.read(true).append(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&making).map_err(io_error(&making))?;
        file.try_lock().map_err(|e| StoreError::PendingLog {
            path: making.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        std::fs::rename(&making, &path).map_err(io_error(&path))?;
        Ok(PendingLog {
            dir: dir.to_path_buf(),
            path,
            name,
            file,
            len: 0,
            torn: false,
        })
    }

    /// How far the file reaches: the end of its last frame.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The point a commit of everything written so far reaches.
    pub(crate) fn mark(&self) -> crate::writer::Mark {
        (self.name.clone(), self.len)
    }

    /// Appends `entry`'s frame; false when the file is torn and takes no
    /// more (the record is then durable only once committed). A failed
    /// write leaves no part of the frame behind (the file is cut back),
    /// so the frames after it still read; when the cut fails too, the
    /// file is torn.
    pub(crate) fn write(&mut self, cover: &Cover, entry: &Entry) -> Result<bool, StoreError> {
        if self.torn {
            return Ok(false);
        }
        let frame = frame(cover, &self.name, self.len, entry);
        if let Err(e) = self.file.write_all(&frame) {
            if let Err(cut) = self.file.set_len(self.len) {
                self.torn = true;
                tracing::error!(
                    path = %self.path.display(), error = %cut,
                    "cutting a torn audit frame failed: records are committed before they are reported \
                     until a fresh pending file replaces this one"
                );
            }
            return Err(io_error(&self.path)(e));
        }
        self.len += frame.len() as u64;
        Ok(true)
    }

    /// Whether the file is torn and must be replaced.
    pub(crate) fn is_torn(&self) -> bool {
        self.torn
    }

    /// A fresh file in place of this one, whose frames must all be
    /// committed: the old one is removed. Returns the old file's name,
    /// whose `audit_pending` row the caller deletes.
    pub(crate) fn rotate(&mut self) -> Result<String, StoreError> {
        let fresh = PendingLog::create(&self.dir)?;
        let old = std::mem::replace(self, fresh);
        std::fs::remove_file(&old.path).map_err(io_error(&old.path))?;
        Ok(old.name)
    }

    /// Removes the file, all of whose frames are committed.
    pub(crate) fn remove(self) -> Result<String, StoreError> {
        std::fs::remove_file(&self.path).map_err(io_error(&self.path))?;
        Ok(self.name)
    }
}

/// What a frame's HMAC covers.
fn mac_parts<'a>(name: &'a str, offset: &'a [u8; 8], content: &'a [u8]) -> [&'a [u8]; 4] {
    [
        b"warden-audit-pending-v1\n",
        name.as_bytes(),
        offset,
        content,
    ]
}

/// Content: time (8 bytes), then the body (the record's kind is read
/// back from it).
fn frame(cover: &Cover, name: &str, offset: u64, entry: &Entry) -> Vec<u8> {
    let mut content = Vec::with_capacity(8 + entry.body.len());
    content.extend_from_slice(&entry.at_ms.to_le_bytes());
    content.extend_from_slice(entry.body.as_bytes());
    let mac = cover.pending_mac(&mac_parts(name, &offset.to_le_bytes(), &content));
    let mut frame = Vec::with_capacity(HEADER + content.len());
    frame.extend_from_slice(
        &u32::try_from(content.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    frame.extend_from_slice(&mac);
    frame.extend_from_slice(&content);
    frame
}

/// The frames of file `name` from `offset` on, as far as they verify,
/// and where they end; with why reading stopped early, if it did (a
/// frame cut short at the very end is a write the host never finished,
/// and no problem).
pub(crate) fn read(
    cover: &Cover,
    name: &str,
    bytes: &[u8],
    offset: u64,
) -> (Vec<Entry>, u64, Option<String>) {
    let mut entries = Vec::new();
    let mut at = usize::try_from(offset).unwrap_or(usize::MAX);
    if at > bytes.len() {
        return (entries, offset, None);
    }
    while at < bytes.len() {
        let rest = &bytes[at..];
        let Some(len) = rest
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(|b: [u8; 4]| u32::from_le_bytes(b) as usize)
        else {
            break;
        };
        if len > MAX_FRAME {
            return (
                entries,
                at as u64,
                Some(format!("offset {at}: a frame of {len} bytes")),
            );
        }
        let Some(content) = rest.get(HEADER..HEADER + len) else {
            break;
        };
        let mac = &rest[4..HEADER];
        let offset = (at as u64).to_le_bytes();
        let parts = mac_parts(name, &offset, content);
        if !cover.pending_mac_valid(&parts, mac) {
            return (
                entries,
                at as u64,
                Some(format!("offset {at}: the frame's HMAC does not verify")),
            );
        }
        match parse(content) {
            Some(entry) => entries.push(entry),
            None => {
                return (
                    entries,
                    at as u64,
                    Some(format!("offset {at}: the frame's content does not parse")),
                );
            }
        }
        at += HEADER + len;
    }
    (entries, at as u64, None)
}

fn parse(content: &[u8]) -> Option<Entry> {
    let at_ms = u64::from_le_bytes(content.get(..8)?.try_into().ok()?);
    let body = std::str::from_utf8(content.get(8..)?).ok()?;
    let event: warden_api::AuditEvent = serde_json::from_str(body).ok()?;
    Some(Entry {
        kind: crate::chain::kind(&event),
        body: body.to_owned(),
        at_ms,
    })
}

impl SqliteStore {
    /// Commits the frames of every pending file no live host holds (left
    /// by a killed one) past the point its last commit reached, then
    /// removes the file; forgets the rows of files that are gone.
    pub(crate) fn recover_pending(&self) -> Result<(), StoreError> {
        let dir = dir_for(self.path());
        let listing = match std::fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&dir)(e)),
        };
        for item in listing {
            let path = item.map_err(io_error(&dir))?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if path.extension().is_some_and(|e| e == "log") {
                self.recover_file(&path, name)?;
            } else if path.extension().is_some_and(|e| e == "new") && !held(&path) {
                // A host killed while making its file: it held no record.
                std::fs::remove_file(&path).map_err(io_error(&path))?;
            }
        }
        self.forget_gone_files(&dir)
    }

    fn recover_file(&self, path: &Path, name: &str) -> Result<(), StoreError> {
        let mut file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => file,
            // Removed by its host meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(path)(e)),
        };
        if file.try_lock().is_err() {
            // Its host lives.
            return Ok(());
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_error(path))?;
        let from = self.pending_offset(name)?;
        let (entries, end, problem) = read(&self.cover, name, &bytes, from);
        if !entries.is_empty() {
            self.commit_entries(&entries, Some(&(name.to_owned(), end)))?;
        }
        match problem {
            Some(problem) => {
                let aside = path.with_extension("rejected");
                std::fs::rename(path, &aside).map_err(io_error(path))?;
                tracing::error!(
                    file = %aside.display(),
                    committed = entries.len(),
                    problem,
                    "a pending audit log holds a frame that is not this host's: the frames before it \
                     are committed, the file is kept aside"
                );
            }
            None => {
                if !entries.is_empty() {
                    tracing::info!(file = %path.display(), records = entries.len(), "committed the audit records a stopped host left pending");
                }
                std::fs::remove_file(path).map_err(io_error(path))?;
            }
        }
        self.forget_pending(name)
    }

    /// How far the chain holds file `name`'s frames (0: none of them).
    fn pending_offset(&self, name: &str) -> Result<u64, StoreError> {
        use rusqlite::OptionalExtension;
        let offset: Option<i64> = self
            .conn()
            .query_row(
                "SELECT offset FROM audit_pending WHERE file = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(StoreError::sql("reading a pending audit log's offset"))?;
        Ok(offset.map_or(0, |o| u64::try_from(o).unwrap_or(0)))
    }

    /// Deletes the row of file `name`, whose frames are all committed and
    /// which is removed.
    pub(crate) fn forget_pending(&self, name: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("DELETE FROM audit_pending WHERE file = ?1")
            .and_then(|mut s| s.execute([name]))
            .map(|_| ())
            .map_err(StoreError::sql("forgetting a pending audit log"))
    }

    fn forget_gone_files(&self, dir: &Path) -> Result<(), StoreError> {
        let names: Vec<String> = {
            let conn = self.conn();
            let mut stmt = conn
                .prepare("SELECT file FROM audit_pending")
                .map_err(StoreError::sql("listing pending audit logs"))?;
            stmt.query_map([], |r| r.get(0))
                .and_then(|rows| rows.collect::<Result<_, _>>())
                .map_err(StoreError::sql("listing pending audit logs"))?
        };
        for name in names {
            if !dir.join(&name).exists() {
                self.forget_pending(&name)?;
            }
        }
        Ok(())
    }
}

/// Whether a live host holds the lock on `path` (a file that cannot be
/// opened counts as held: it is left alone).
fn held(path: &Path) -> bool {
    OpenOptions::new()
        .read(true)
        .open(path)
        .map_or(true, |file| file.try_lock().is_err())
}

/// Records, in the transaction open on `conn`, that the chain holds file
/// `name`'s frames up to `end`.
pub(crate) fn mark_in(conn: &rusqlite::Connection, name: &str, end: u64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO audit_pending (file, offset) VALUES (?1, ?2) \
         ON CONFLICT (file) DO UPDATE SET offset = excluded.offset",
    )
    .and_then(|mut s| s.execute(rusqlite::params![name, crate::db::ms(end)]))
    .map(|_| ())
    .map_err(StoreError::sql(
        "recording how far a pending audit log is committed",
    ))
}

#[cfg(test)]
mod tests;
