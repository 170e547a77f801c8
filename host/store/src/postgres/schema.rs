//! The PostgreSQL schema, as an ordered list of migrations. The table
//! `warden_schema` records how many have been applied. Replicas starting
//! together migrate one at a time: all of a start's migrations run in one
//! transaction under an advisory lock, so a replica sees the schema
//! before or after, never half of it. Never edit a published migration:
//! append one.

use sqlx::{Connection, PgConnection, Row};

use crate::StoreError;

/// Version 1: everything version 4 of the SQLite schema holds, and audit
/// chains: one per host key, each with its own sequence, so replicas
/// append without waiting for each other. Text that comes from a call's
/// arguments (a rule suggested from them, an approval's binding key,
/// which separates its parts with NUL) is `BYTEA`: PostgreSQL's `TEXT`
/// cannot hold NUL, and a call must not be able to make a write fail.
const V1: &str = "
CREATE TABLE rules (
    id BIGSERIAL PRIMARY KEY,
    agent TEXT NOT NULL,
    rule BYTEA NOT NULL,
    approval TEXT,
    added_ms BIGINT NOT NULL,
    UNIQUE (agent, rule)
);
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    n BIGSERIAL NOT NULL,
    agent TEXT NOT NULL,
    request TEXT NOT NULL,
    call_key BYTEA NOT NULL,
    asked_ms BIGINT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'answered', 'consumed', 'dropped')),
    answer TEXT,
    answered_ms BIGINT,
    closed_ms BIGINT
);
CREATE SEQUENCE approval_ids;
CREATE INDEX approvals_open ON approvals (state) WHERE state IN ('pending', 'answered');
CREATE SEQUENCE grant_ids;
CREATE TABLE grants (
    n BIGINT PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    agent TEXT NOT NULL,
    grant_json TEXT NOT NULL,
    valid_to_ms BIGINT NOT NULL,
    revoked_ms BIGINT,
    revoked_by TEXT
);
CREATE INDEX grants_live ON grants (valid_to_ms) WHERE revoked_ms IS NULL;
CREATE TABLE trust (
    agent TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    updated_ms BIGINT NOT NULL
);
-- Reserved for the toolsmith: proposed tools, their validation and approval.
CREATE TABLE blueprints (
    id TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
-- An operator's approval of a server's tool definitions (`pins.rs`); the
-- tool's name comes from the server, so it is bytes.
CREATE TABLE definition_pins (
    server TEXT NOT NULL,
    tool BYTEA NOT NULL,
    digest TEXT NOT NULL,
    definition TEXT NOT NULL,
    approved_ms BIGINT NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (server, tool)
);
-- One audit chain per host key; the row is locked by each commit that
-- appends to the chain, so appends to one chain are serial.
CREATE TABLE audit_chains (
    chain TEXT PRIMARY KEY,
    public_key TEXT NOT NULL,
    started_ms BIGINT NOT NULL
);
CREATE TABLE audit (
    chain TEXT NOT NULL REFERENCES audit_chains (chain),
    seq BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (chain, seq)
);
";

/// MCP sessions of older clients, which any replica may take over
/// (`sessions.rs`); their ids come from the client's header, so bytes.
const V2: &str = "
CREATE TABLE sessions (
    id BYTEA PRIMARY KEY,
    state TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expires_ms);
";

/// The toolsmith's gap log (`gaps.rs`); what an agent named is bytes.
const V3: &str = "
CREATE TABLE gaps (
    id BIGSERIAL PRIMARY KEY,
    signature TEXT NOT NULL,
    agent BYTEA NOT NULL,
    session BYTEA NOT NULL,
    asked BYTEA NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX gaps_signature ON gaps (signature, at_ms, session);
CREATE INDEX gaps_at ON gaps (at_ms);
CREATE TABLE gap_recurring (
    signature TEXT PRIMARY KEY,
    recurring_ms BIGINT NOT NULL
);
";

/// Each chain's endorsement by the deployment's audit root (`anchor.rs`).
const V4: &str = "
ALTER TABLE audit_chains ADD COLUMN endorsement TEXT;
";

/// The toolsmith's blueprints (`blueprints.rs`), replacing the table
/// version 2 reserved for them (no version ever wrote to it).
const V5: &str = "
DROP TABLE blueprints;
CREATE TABLE blueprints (
    id BIGSERIAL PRIMARY KEY,
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
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX blueprints_state ON blueprints (state, expires_ms);
";

/// What the toolsmith built of a blueprint: the component and its
/// signed statement and validation report.
const V6: &str = "
ALTER TABLE blueprints ADD COLUMN artifact TEXT;
ALTER TABLE blueprints ADD COLUMN component BYTEA;
";

/// Each agent's trust changes beside the audit chains (the console's
/// trust history), written with the change; the chains' earlier ones
/// copied in.
const V7: &str = "
CREATE TABLE trust_changes (
    id BIGSERIAL PRIMARY KEY,
    agent TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    event TEXT NOT NULL
);
CREATE INDEX trust_changes_agent ON trust_changes (agent, id);
INSERT INTO trust_changes (agent, at_ms, event)
    SELECT (body::jsonb)->>'agent', at_ms, body FROM audit
    WHERE kind = 'trust' AND (body::jsonb)->>'agent' IS NOT NULL
    ORDER BY at_ms, chain, seq;
";

/// One row whose epoch every grant change moves in its own transaction
/// (`data.rs`), so each replica reads, before a decision, whether the
/// grants it holds are still the ones in force: a revocation committed
/// anywhere applies to every replica's next call. (Versions before this
/// announced changes with `NOTIFY`, which arrives some time after the
/// commit.)
const V8: &str = "
CREATE TABLE grant_epoch (epoch BIGINT NOT NULL);
INSERT INTO grant_epoch VALUES (0);
";

/// The deployment's installed plugins (`plugins.rs`); a name is a
/// manifest's checked plugin name.
const V9: &str = "
CREATE TABLE plugins (
    name TEXT PRIMARY KEY,
    digest TEXT,
    record TEXT NOT NULL,
    component BYTEA,
    signature TEXT,
    at_ms BIGINT NOT NULL
);
";

/// The gap log's sessions by signature, so whether a signature is
/// recurring is read one session at a time (`gaps.rs`).
const V10: &str = "CREATE INDEX gaps_session ON gaps (signature, session, at_ms);";

const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10];

/// The PostgreSQL schema version this build writes.
pub const PG_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The advisory lock migrations hold (an arbitrary constant: "warden" in
/// ASCII).
const MIGRATION_LOCK: i64 = 0x7761_7264_656e;

/// Checks that the database is empty or Warden's, at most this build's
/// version, and migrates it to [`PG_SCHEMA_VERSION`].
pub(crate) async fn migrate(conn: &mut PgConnection, location: &str) -> Result<u32, StoreError> {
    let read = StoreError::pg("reading the schema version");
    let mut tx = conn.begin().await.map_err(read)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg("waiting for other replicas' migrations"))?;
    let ours: bool = sqlx::query(
        "SELECT EXISTS (SELECT 1 FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_name = 'warden_schema')",
    )
    .fetch_one(&mut *tx)
    .await
    .and_then(|r| r.try_get(0))
    .map_err(StoreError::pg("reading the schema version"))?;
    let found: u32 = if ours {
        let v: i32 = sqlx::query("SELECT version FROM warden_schema")
            .fetch_one(&mut *tx)
            .await
            .and_then(|r| r.try_get(0))
            .map_err(StoreError::pg("reading the schema version"))?;
        u32::try_from(v).unwrap_or(0)
    } else {
        let tables: i64 = sqlx::query(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
        )
        .fetch_one(&mut *tx)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(StoreError::pg("reading the schema version"))?;
        if tables > 0 {
            return Err(StoreError::Database {
                location: location.to_owned(),
                detail: "the schema holds tables but no Warden schema version; \
                         give Warden a database (or schema) of its own"
                    .into(),
            });
        }
        sqlx::raw_sql("CREATE TABLE warden_schema (version INTEGER NOT NULL); INSERT INTO warden_schema VALUES (0);")
            .execute(&mut *tx)
            .await
            .map_err(|source| StoreError::PgMigrate { version: 0, source })?;
        0
    };
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::Database {
            location: location.to_owned(),
            detail: format!(
                "the database has schema version {found}, newer than this warden knows \
                 ({PG_SCHEMA_VERSION}); run a newer warden — nothing was changed"
            ),
        });
    }
    for version in (found + 1)..=PG_SCHEMA_VERSION {
        let Some(sql) = MIGRATIONS.get(version as usize - 1) else {
            break;
        };
        let err = |source| StoreError::PgMigrate { version, source };
        sqlx::raw_sql(*sql).execute(&mut *tx).await.map_err(err)?;
        sqlx::query("UPDATE warden_schema SET version = $1")
            .bind(version as i32)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        tracing::info!(version, "PostgreSQL schema migrated");
    }
    tx.commit().await.map_err(|source| StoreError::PgMigrate {
        version: PG_SCHEMA_VERSION,
        source,
    })?;
    Ok(PG_SCHEMA_VERSION)
}
