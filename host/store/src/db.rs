//! Opening the database: refuse what is not ours or is newer than us,
//! then WAL mode and migrations.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use warden_signing::SecretKey;

use crate::StoreError;

/// How long a statement waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
use crate::migrate::{self, SCHEMA_VERSION};

/// The state database. Cheap to share behind an `Arc`; every method is
/// one transaction on one connection, and concurrent audit appends share
/// transactions (`writer.rs`).
pub struct SqliteStore {
    conn: Mutex<Connection>,
    pub(crate) group: crate::writer::Group,
    /// The host key, the tag key and the checkpoint state of the audit
    /// chain.
    pub(crate) cover: crate::checkpoint::Cover,
    path: PathBuf,
    /// The schema version it was opened at.
    version: u32,
    audit_args: bool,
    pub(crate) grant_changes: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// When a commit counts as done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Synced to disk at every commit: survives a killed host and a
    /// machine crash or power loss.
    #[default]
    Full,
    /// Synced at WAL checkpoints: survives a killed host (the operating
    /// system has the data), may lose the last commits on a machine crash.
    /// Several times faster on slow disks.
    Normal,
}

/// Milliseconds since the Unix epoch, by the system clock.
/// Milliseconds as both databases keep them (a signed 64-bit integer),
/// saturating.
pub(crate) fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn corrupt(path: &Path, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

/// Opens (creating if missing) and checks the database at `path`, without
/// migrating it.
fn connect(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| corrupt(path, e))?;
    // The first read of the header: a file that is not SQLite fails here.
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| corrupt(path, e))?;
    let found = migrate::user_version(&conn).map_err(|e| corrupt(path, e))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    if found == 0 && tables > 0 {
        return Err(corrupt(
            path,
            "it holds tables but no Warden schema version",
        ));
    }
    check_integrity(&conn).map_err(|e| corrupt(path, e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| corrupt(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(corrupt(path, format!("cannot use WAL mode (got {mode})")));
    }
    // FULL: a commit is on disk before the caller reports it done.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| corrupt(path, e))?;
    // Room for every statement the store runs, so none is parsed twice.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// The integrity check at open, in time independent of the audit log's
/// length: every table but `audit` (and its indexes) fully, and of the
/// audit log its newest record, through the pages from the root to it
/// that the next append walks. The rest of the log is old, append-only
/// and never read by a serving host; `warden audit verify` reads all of
/// it. (A full `quick_check` reads every page: a second per ~100 MB of
/// log, at every start.)
fn check_integrity(conn: &Connection) -> Result<(), String> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'audit'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| e.to_string())?;
    for table in tables {
        let check: String = conn
            .query_row(
                &format!("PRAGMA quick_check(\"{}\")", table.replace('"', "\"\"")),
                [],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())?;
        if check != "ok" {
            return Err(format!("integrity check of `{table}`: {check}"));
        }
    }
    let audit: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    if audit > 0 {
        conn.query_row(
            "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
            [],
            |_| Ok(()),
        )
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(()),
            e => Err(e),
        })
        .map_err(|e| format!("reading the newest audit record: {e}"))?;
    }
    Ok(())
}

impl SqliteStore {
    /// Opens the database at `path`, migrating it to [`SCHEMA_VERSION`];
    /// audit records are signed with `key`. A file that is not a Warden
    /// database, is damaged, or has a newer schema is an error: the host
    /// never silently starts empty.
    pub fn open(path: &Path, key: SecretKey) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_at(path, key, SCHEMA_VERSION)
    }

    /// Opens at an older schema version: for migration tests only.
    #[doc(hidden)]
    pub fn open_at(path: &Path, key: SecretKey, version: u32) -> Result<SqliteStore, StoreError> {
        crate::private::private_database(path)?;
        let mut conn = connect(path)?;
        migrate::migrate_to(&mut conn, version)?;
        // WAL mode made `-wal` and `-shm` now, with the database's mode;
        // files left by an older run keep theirs until narrowed here.
        crate::private::private_database(path)?;
        let tagged = version >= crate::checkpoint::TAGGED_SINCE;
        let store = SqliteStore {
            conn: Mutex::new(conn),
            cover: crate::checkpoint::Cover::new(key, tagged),
            group: crate::writer::Group::default(),
            path: path.to_path_buf(),
            version,
            audit_args: false,
            grant_changes: std::sync::atomic::AtomicU64::new(0),
        };
        if version >= crate::pending::PENDING_SINCE {
            // What a killed host left pending joins the chain before
            // anything else is appended or read.
            store.recover_pending()?;
        }
        Ok(store)
    }

    /// How hard each commit is pushed to disk.
    pub fn with_durability(self, durability: Durability) -> Result<SqliteStore, StoreError> {
        let value = match durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        self.conn()
            .pragma_update(None, "synchronous", value)
            .map_err(StoreError::sql("setting durability"))?;
        // Under "normal", a record is as durable in the pending log as in a
        // commit; under "full" only a synced commit is.
        let pending = match durability {
            Durability::Normal if self.version >= crate::pending::PENDING_SINCE => Some(
                crate::pending::PendingLog::create(&crate::pending::dir_for(&self.path))?,
            ),
            _ => None,
        };
        self.group.set_pending(pending);
        Ok(self)
    }

    /// Decisions carry the call's arguments, not just their digest.
    pub fn with_audit_args(mut self, on: bool) -> SqliteStore {
        self.audit_args = on;
        self
    }

    pub fn audit_args(&self) -> bool {
        self.audit_args
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        migrate::user_version(&self.conn()).map_err(StoreError::sql("reading the schema version"))
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Commits the pending audit log and removes it (appends after this
    /// commit before they return), then copies the write-ahead log into
    /// the database file and empties it (`wal_checkpoint(TRUNCATE)`), so
    /// the next open recovers and replays nothing. A
    /// reader in another process that holds an older snapshot past a
    /// short wait keeps the log for now: that is not an error, the next
    /// checkpoint takes it.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        const OPERATION: &str = "checkpointing the write-ahead log";
        const WAIT: Duration = Duration::from_millis(250);
        self.retire_pending()?;
        let conn = self.conn();
        conn.busy_timeout(WAIT)
            .map_err(StoreError::sql(OPERATION))?;
        let done = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        });
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(StoreError::sql(OPERATION))?;
        match done {
            Ok(0) => Ok(()),
            Ok(_) => {
                tracing::debug!(
                    "a reader holds an older snapshot; the write-ahead log stays until the next checkpoint"
                );
                Ok(())
            }
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) =>
            {
                tracing::debug!(
                    "the database is busy; the write-ahead log stays until the next checkpoint"
                );
                Ok(())
            }
            Err(e) => Err(StoreError::sql(OPERATION)(e)),
        }
    }

    /// Starts this run's write-ahead log. A run's first commit creates
    /// the log file and syncs its header and the directory (two `fsync`s:
    /// milliseconds on a virtual disk, measured 1-7 ms here), which the
    /// first call's decision record would otherwise wait for. This
    /// commits the schema version over itself: one page, no data changed.
    pub fn warm_up(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        crate::tx::write(&conn, "starting the write-ahead log", |conn| {
            let version = crate::migrate::user_version(conn)
                .map_err(StoreError::sql("reading the schema version"))?;
            conn.pragma_update(None, "user_version", version)
                .map_err(StoreError::sql("starting the write-ahead log"))
        })
    }

    /// Changes when grants may have changed: a grant issued or revoked
    /// through this store, or any commit by another connection (another
    /// process). Cheap to poll before trusting a cache of grants.
    pub fn grants_version(&self) -> Result<(i64, u64), StoreError> {
        let conn = self.conn();
        let v: i64 = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
            .map_err(StoreError::sql("reading the data version"))?;
        Ok((
            v,
            self.grant_changes.load(std::sync::atomic::Ordering::SeqCst),
        ))
    }
}
