//! The toolsmith's blueprints and their lifecycle: each proposal kept as
//! its canonical text with its digest and the facts the host derived,
//! and each move between states made only from the state it was
//! checked against (a compare-and-set in one transaction), with one
//! audit record (`blueprint-moved`) carrying the digests. Which moves are
//! legal is the toolsmith's (`warden_toolsmith::State`); this file keeps
//! them. This file holds the SQLite side and the types;
//! `postgres/blueprints.rs` the PostgreSQL one.
//!
//! Attack: two answers racing (an approval and an expiry, two
//! operators), or an edit slipped in between a person's look and the
//! build. A move names the state it starts from and fails if the row is
//! elsewhere; the blueprint's text is never updated, only its state.

use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use warden_api::AuditEvent;

use crate::chain::Entry;
use crate::db::ms;
use crate::{SqliteStore, StoreError};

/// A blueprint as proposed, with what the host derived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewBlueprint {
    /// The derived tool name.
    pub name: String,
    /// `domain:action`.
    pub capability: String,
    /// Who proposed it: `agent:<id>`, `operator:<name>`, ...
    pub author: String,
    /// The blueprint's canonical text.
    pub blueprint: String,
    pub blueprint_sha256: String,
    /// The derived facts, as JSON.
    pub derived: String,
    pub at_ms: u64,
    /// When it is rejected if nobody answered.
    pub expires_ms: u64,
}

/// A stored blueprint and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBlueprint {
    pub id: u64,
    pub name: String,
    pub capability: String,
    pub state: String,
    pub author: String,
    pub blueprint: String,
    pub blueprint_sha256: String,
    pub derived: String,
    /// The approval's binding (JSON), once a person approved it.
    pub approval: Option<String>,
    /// Who moved it last, and why (a rejection's or failure's reason).
    pub actor: Option<String>,
    pub reason: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub expires_ms: u64,
    /// What the build and validation made of it (JSON: the component's
    /// digest, the signed statement, the validation report), once built.
    pub artifact: Option<String>,
}

/// Where one blueprint stands, without its texts (what a running host
/// polls).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlueprintState {
    pub id: u64,
    pub name: String,
    pub state: String,
    /// Who proposed it (`agent:NAME`, `operator:NAME`, ...).
    pub author: String,
    pub created_ms: u64,
    pub expires_ms: u64,
    /// When it last moved, or (while a host builds or validates it) when
    /// that host last said it still works on it.
    pub updated_ms: u64,
}

/// A built component and what is known of it, stored with a move (the
/// bytes are read back with `Store::blueprint_component`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlueprintArtifact {
    /// JSON: digests, the signed statement, the validation report.
    pub meta: String,
    pub component_sha256: String,
    pub component: Vec<u8>,
}

/// One move of a blueprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlueprintMove {
    pub id: u64,
    pub from: String,
    pub to: String,
    pub actor: String,
    pub reason: Option<String>,
    /// The binding to keep (JSON); `None` clears it (an approval voided
    /// or refused) unless `keep_approval`.
    pub approval: Option<String>,
    pub keep_approval: bool,
    pub builder_sha256: Option<String>,
    pub grants_sha256: Option<String>,
    /// Kept with the move (replacing any kept before); `None` keeps what
    /// is there.
    pub artifact: Option<BlueprintArtifact>,
    pub at_ms: u64,
}

/// The columns every read selects, in [`StoredBlueprint`]'s order (a
/// macro, so that the SQL stays a literal).
macro_rules! blueprint_columns {
    () => {
        "id, name, capability, state, author, blueprint, blueprint_sha256, derived, approval, \
         actor, reason, created_ms, updated_ms, expires_ms, artifact"
    };
}
pub(crate) use blueprint_columns;

pub(crate) fn proposed_event(id: u64, b: &NewBlueprint) -> AuditEvent {
    AuditEvent::BlueprintMoved {
        id,
        name: b.name.clone(),
        from: None,
        to: "pending".into(),
        actor: b.author.clone(),
        reason: None,
        blueprint_sha256: b.blueprint_sha256.clone(),
        builder_sha256: None,
        grants_sha256: None,
        component_sha256: None,
    }
}

pub(crate) fn moved_event(stored: &StoredBlueprint, m: &BlueprintMove) -> AuditEvent {
    AuditEvent::BlueprintMoved {
        id: m.id,
        name: stored.name.clone(),
        from: Some(m.from.clone()),
        to: m.to.clone(),
        actor: m.actor.clone(),
        reason: m.reason.clone(),
        blueprint_sha256: stored.blueprint_sha256.clone(),
        builder_sha256: m.builder_sha256.clone(),
        grants_sha256: m.grants_sha256.clone(),
        component_sha256: m
            .artifact
            .as_ref()
            .map(|a| a.component_sha256.clone())
            .or_else(|| stored.artifact.as_deref().and_then(component_digest)),
    }
}

/// The move's compare-and-set, the same on every backend: `m` lands only
/// on a blueprint still in `m.from`. The approval the row keeps after it.
pub(crate) fn checked_move(
    stored: &StoredBlueprint,
    m: &BlueprintMove,
) -> Result<Option<String>, StoreError> {
    if stored.state != m.from {
        return Err(StoreError::BlueprintMoved {
            id: m.id,
            expected: m.from.clone(),
            actual: stored.state.clone(),
        });
    }
    Ok(if m.keep_approval {
        stored.approval.clone()
    } else {
        m.approval.clone()
    })
}

/// The component digest kept in an artifact's JSON.
fn component_digest(meta: &str) -> Option<String> {
    let meta: serde_json::Value = serde_json::from_str(meta).ok()?;
    meta.get("component_sha256")?.as_str().map(str::to_owned)
}

fn row(r: &Row<'_>) -> rusqlite::Result<StoredBlueprint> {
    Ok(StoredBlueprint {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        capability: r.get(2)?,
        state: r.get(3)?,
        author: r.get(4)?,
        blueprint: r.get(5)?,
        blueprint_sha256: r.get(6)?,
        derived: r.get(7)?,
        approval: r.get(8)?,
        actor: r.get(9)?,
        reason: r.get(10)?,
        created_ms: r.get::<_, i64>(11)? as u64,
        updated_ms: r.get::<_, i64>(12)? as u64,
        expires_ms: r.get::<_, i64>(13)? as u64,
        artifact: r.get(14)?,
    })
}

impl SqliteStore {
    pub(crate) fn add_blueprint(&self, b: &NewBlueprint) -> Result<StoredBlueprint, StoreError> {
        let what = "storing a blueprint";
        let conn = self.conn();
        crate::tx::write(&conn, what, |conn| {
            conn.prepare_cached(
                "INSERT INTO blueprints (name, capability, state, author, blueprint, \
                 blueprint_sha256, derived, actor, created_ms, updated_ms, expires_ms) \
                 VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?3, ?7, ?7, ?8)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    b.name,
                    b.capability,
                    b.author,
                    b.blueprint,
                    b.blueprint_sha256,
                    b.derived,
                    ms(b.at_ms),
                    ms(b.expires_ms)
                ])
            })
            .map_err(StoreError::sql(what))?;
            let id = conn.last_insert_rowid() as u64;
            self.append_in(conn, &[Entry::new(&proposed_event(id, b), b.at_ms)?])?;
            read_one(conn, id, what)?.ok_or(StoreError::NoSuchBlueprint(id))
        })
    }

    pub(crate) fn blueprints(&self) -> Result<Vec<StoredBlueprint>, StoreError> {
        let what = "reading the blueprints";
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(concat!(
                "SELECT ",
                blueprint_columns!(),
                " FROM blueprints ORDER BY id DESC"
            ))
            .map_err(StoreError::sql(what))?;
        stmt.query_map([], row)
            .and_then(Iterator::collect)
            .map_err(StoreError::sql(what))
    }

    pub(crate) fn blueprint_states(&self) -> Result<Vec<BlueprintState>, StoreError> {
        let what = "reading where the blueprints stand";
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, name, state, author, created_ms, expires_ms, updated_ms \
                 FROM blueprints ORDER BY id DESC",
            )
            .map_err(StoreError::sql(what))?;
        stmt.query_map([], |r| {
            Ok(BlueprintState {
                id: r.get::<_, i64>(0)? as u64,
                name: r.get(1)?,
                state: r.get(2)?,
                author: r.get(3)?,
                created_ms: r.get::<_, i64>(4)? as u64,
                expires_ms: r.get::<_, i64>(5)? as u64,
                updated_ms: r.get::<_, i64>(6)? as u64,
            })
        })
        .and_then(Iterator::collect)
        .map_err(StoreError::sql(what))
    }

    pub(crate) fn touch_blueprint(
        &self,
        id: u64,
        state: &str,
        at_ms: u64,
    ) -> Result<bool, StoreError> {
        self.conn()
            .prepare_cached("UPDATE blueprints SET updated_ms = ?3 WHERE id = ?1 AND state = ?2")
            .and_then(|mut s| s.execute(params![ms(id), state, ms(at_ms)]))
            .map(|changed| changed == 1)
            .map_err(StoreError::sql("marking a blueprint as worked on"))
    }

    pub(crate) fn blueprint(&self, id: u64) -> Result<Option<StoredBlueprint>, StoreError> {
        read_one(&self.conn(), id, "reading a blueprint")
    }

    /// Every move in one transaction: all land or none does.
    pub(crate) fn move_blueprints(
        &self,
        moves: &[BlueprintMove],
    ) -> Result<Vec<StoredBlueprint>, StoreError> {
        let what = "moving a blueprint";
        let conn = self.conn();
        crate::tx::write(&conn, what, |conn| {
            let mut moved = Vec::with_capacity(moves.len());
            for m in moves {
                moved.push(move_in(self, conn, m, what)?);
            }
            Ok(moved)
        })
    }

    pub(crate) fn blueprint_component(&self, id: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let what = "reading a built component";
        self.conn()
            .prepare_cached("SELECT component FROM blueprints WHERE id = ?1")
            .and_then(|mut s| {
                s.query_row(params![ms(id)], |r| r.get::<_, Option<Vec<u8>>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .map_err(StoreError::sql(what))
    }
}

fn move_in(
    store: &SqliteStore,
    conn: &rusqlite::Connection,
    m: &BlueprintMove,
    what: &'static str,
) -> Result<StoredBlueprint, StoreError> {
    let stored = read_one(conn, m.id, what)?.ok_or(StoreError::NoSuchBlueprint(m.id))?;
    let approval = checked_move(&stored, m)?;
    conn.prepare_cached(
        "UPDATE blueprints SET state = ?2, approval = ?3, actor = ?4, reason = ?5, \
         updated_ms = ?6 WHERE id = ?1 AND state = ?7",
    )
    .and_then(|mut s| {
        s.execute(params![
            ms(m.id),
            m.to,
            approval,
            m.actor,
            m.reason,
            ms(m.at_ms),
            m.from
        ])
    })
    .map_err(StoreError::sql(what))?;
    if let Some(a) = &m.artifact {
        conn.prepare_cached("UPDATE blueprints SET artifact = ?2, component = ?3 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![ms(m.id), a.meta, a.component]))
            .map_err(StoreError::sql(what))?;
    }
    store.append_in(conn, &[Entry::new(&moved_event(&stored, m), m.at_ms)?])?;
    read_one(conn, m.id, what)?.ok_or(StoreError::NoSuchBlueprint(m.id))
}

fn read_one(
    conn: &rusqlite::Connection,
    id: u64,
    what: &'static str,
) -> Result<Option<StoredBlueprint>, StoreError> {
    conn.prepare_cached(concat!(
        "SELECT ",
        blueprint_columns!(),
        " FROM blueprints WHERE id = ?1"
    ))
    .and_then(|mut s| s.query_row(params![ms(id)], row).optional())
    .map_err(StoreError::sql(what))
}
