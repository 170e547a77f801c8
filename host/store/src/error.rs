use std::path::PathBuf;

/// Why the store could not open or change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error(
        "{path}: the database has schema version {found}, newer than this warden knows ({known}); \
         run a newer warden, or restore a backup — the file was not changed"
    )]
    NewerSchema {
        path: PathBuf,
        found: u32,
        known: u32,
    },
    #[error(
        "{path}: not a usable Warden database ({detail}); move it aside to start empty, or restore a backup"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error("{path}: opening the database: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("migrating the database to schema version {version}: {source}")]
    Migrate {
        version: u32,
        source: rusqlite::Error,
    },
    #[error("{operation}: {source}")]
    Sql {
        operation: &'static str,
        source: rusqlite::Error,
    },
    #[error("{location}: connecting to PostgreSQL: {source}")]
    Connect {
        location: String,
        source: sqlx::Error,
    },
    #[error("{location}: {detail}")]
    Database { location: String, detail: String },
    #[error("migrating the PostgreSQL schema to version {version}: {source}")]
    PgMigrate { version: u32, source: sqlx::Error },
    #[error("{operation}: {source}")]
    Postgres {
        operation: &'static str,
        source: sqlx::Error,
    },
    #[error("{operation}: stored data does not parse: {detail}")]
    Data {
        operation: &'static str,
        detail: String,
    },
    #[error("{path}: the host key: {detail}")]
    Key { path: PathBuf, detail: String },
    #[error("{path}: making it owner-only: {source}")]
    Permissions {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: the pending audit log: {source}")]
    PendingLog {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The commit that held an audit record failed (for every caller
    /// whose record was in it).
    #[error("committing audit records: {detail}")]
    AuditCommit { detail: String },
    /// The chain's last record carries no tag or signature of this host
    /// key: appending after it (or signing it) would vouch for it.
    #[error(
        "the audit chain's last record ({seq}) carries neither a tag nor a signature of this host's key: \
         records were appended without the key, the chain was cut inside a commit, or it was made by \
         another host; nothing is appended after it until an operator restores the chain \
         (`warden audit verify` names the first bad record)"
    )]
    UncoveredAuditHead { seq: u64 },
    #[error("no grant `{0}` is active")]
    NoSuchGrant(String),
    #[error("approval `{0}` is not pending: it was answered, closed, or never asked")]
    NotPending(String),
    #[error("blueprint {id} is not {expected} (any more): it is {actual}")]
    BlueprintMoved {
        id: u64,
        expected: String,
        actual: String,
    },
    #[error("no blueprint {0}")]
    NoSuchBlueprint(u64),
}

impl StoreError {
    pub(crate) fn sql(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
        move |source| StoreError::Sql { operation, source }
    }

    pub(crate) fn pg(operation: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
        move |source| StoreError::Postgres { operation, source }
    }

    pub(crate) fn data(operation: &'static str) -> impl FnOnce(serde_json::Error) -> StoreError {
        move |e| StoreError::Data {
            operation,
            detail: e.to_string(),
        }
    }
}
