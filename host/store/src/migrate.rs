//! The schema, as an ordered list of migrations. `PRAGMA user_version`
//! records how many have been applied; each runs in its own transaction
//! with the version bump, so a crash mid-migration leaves the previous
//! version intact. Never edit a published migration: append one.

use rusqlite::Connection;

use crate::StoreError;

/// Version 1: rules, approvals, the audit chain.
const V1: &str = "
CREATE TABLE rules (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    rule TEXT NOT NULL,
    approval TEXT,
    added_ms INTEGER NOT NULL,
    UNIQUE (agent, rule)
);
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    request TEXT NOT NULL,
    call_key TEXT NOT NULL,
    asked_ms INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'answered', 'consumed', 'dropped')),
    answer TEXT,
    answered_ms INTEGER,
    closed_ms INTEGER
);
CREATE INDEX approvals_open ON approvals (state) WHERE state IN ('pending', 'answered');
CREATE TABLE audit (
    seq INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);
";

/// Version 2: capability grants, trust per agent, toolsmith blueprints.
const V2: &str = "
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    grant_json TEXT NOT NULL,
    valid_to_ms INTEGER NOT NULL,
    revoked_ms INTEGER,
    revoked_by TEXT
);
CREATE INDEX grants_live ON grants (valid_to_ms) WHERE revoked_ms IS NULL;
CREATE TABLE trust (
    agent TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
);
-- Reserved for the toolsmith: proposed tools, their validation and approval.
CREATE TABLE blueprints (
    id TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
";

/// Version 3: audit records are signed once per commit, on the commit's
/// last record; the others carry an empty signature, covered by that one
/// through the hash links (`chain.rs`). The table is unchanged and older
/// chains (a signature on every record) stay valid; the version exists so
/// that an older warden, which would call the unsigned records edited,
/// refuses the file instead.
const V3: &str = "-- audit records signed per commit: no table changes";

/// Version 4: every commit's last record carries a `tag`, an HMAC of its
/// hash under a key derived from the host key, and only checkpoints
/// carry an ed25519 `signature` (`checkpoint.rs`). Older records keep
/// their signatures and verify as before; the version exists so that an
/// older warden, which would call the records between checkpoints
/// unsigned, refuses the file instead.
const V4: &str = "ALTER TABLE audit ADD COLUMN tag TEXT NOT NULL DEFAULT '';";

/// Version 5: definition pins, an operator's approval of a server's tool
/// definitions (`pins.rs`).
const V5: &str = "
CREATE TABLE definition_pins (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    digest TEXT NOT NULL,
    definition TEXT NOT NULL,
    approved_ms INTEGER NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (server, tool)
);
";

const V6: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expires_ms);
";

const V7: &str = "
CREATE TABLE gaps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    signature TEXT NOT NULL,
    agent TEXT NOT NULL,
    session TEXT NOT NULL,
    asked TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX gaps_signature ON gaps (signature, at_ms, session);
CREATE INDEX gaps_at ON gaps (at_ms);
CREATE TABLE gap_recurring (
    signature TEXT PRIMARY KEY,
    recurring_ms INTEGER NOT NULL
);
";

/// The toolsmith's blueprints (`blueprints.rs`), replacing the table
/// version 2 reserved for them (no version ever wrote to it).
const V8: &str = "
DROP TABLE blueprints;
CREATE TABLE blueprints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    capability TEXT NOT NULL,
    state TEXT NOT NULL,
    author TEXT NOT NULL,
    blueprint TEXT NOT NULL,
    blueprint_sha256 TEXT NOT NULL,
    derived TEXT NOT NULL,
    approval TEXT,
    actor TEXT,
    reason TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX blueprints_state ON blueprints (state, expires_ms);
";

/// Version 9: what the toolsmith built of a blueprint: the component and
/// its signed statement and validation report.
const V9: &str = "
ALTER TABLE blueprints ADD COLUMN artifact TEXT;
ALTER TABLE blueprints ADD COLUMN component BLOB;
";

/// Version 10: each agent's trust changes beside the audit chain (the
/// console's trust history), written with the change; the chain's
/// earlier ones copied in. An index on the audit log instead cost every
/// call's commits an index page.
const V10: &str = "
CREATE TABLE trust_changes (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    event TEXT NOT NULL
);
CREATE INDEX trust_changes_agent ON trust_changes (agent, id);
INSERT INTO trust_changes (agent, at_ms, event)
    SELECT json_extract(body, '$.agent'), at_ms, body FROM audit
    WHERE kind = 'trust' AND json_valid(body) AND json_extract(body, '$.agent') IS NOT NULL
    ORDER BY seq;
";

/// Version 11: the deployment's installed plugins (`plugins.rs`), which
/// replicas sharing a store keep their own registries equal to.
const V11: &str = "
CREATE TABLE plugins (
    name TEXT PRIMARY KEY,
    digest TEXT,
    record TEXT NOT NULL,
    component BLOB,
    signature TEXT,
    at_ms INTEGER NOT NULL
);
";

/// Version 12: how far the chain holds each pending audit log's frames
/// (`pending.rs`), written with the commit that took them.
const V12: &str = "
CREATE TABLE audit_pending (
    file TEXT PRIMARY KEY,
    offset INTEGER NOT NULL
);
";

/// Version 13: the gap log's sessions by signature, so whether a
/// signature is recurring is read one session at a time (`gaps.rs`).
const V13: &str = "CREATE INDEX gaps_session ON gaps (signature, session, at_ms);";

pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn user_version(conn: &Connection) -> Result<u32, rusqlite::Error> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Applies the migrations after the database's version, up to `target`.
pub(crate) fn migrate_to(conn: &mut Connection, target: u32) -> Result<(), StoreError> {
    let found = user_version(conn).map_err(StoreError::sql("reading the schema version"))?;
    for version in (found + 1)..=target {
        let Some(sql) = MIGRATIONS.get(version as usize - 1) else {
            break;
        };
        let err = |source| StoreError::Migrate { version, source };
        let tx = conn.transaction().map_err(err)?;
        tx.execute_batch(sql).map_err(err)?;
        tx.pragma_update(None, "user_version", version)
            .map_err(err)?;
        tx.commit().map_err(err)?;
        tracing::info!(version, "database migrated");
    }
    Ok(())
}
