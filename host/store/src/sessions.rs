//! MCP sessions of clients on protocol revisions before 2026-07-28: what
//! their `initialize` said, kept so that another replica (or this host
//! after a restart) can take the session over without the client
//! initializing again. A session is kept until its client ends it or
//! until it expires; an expired one is never handed out, and storing a
//! session clears the expired ones. A session is no authority: every
//! request still carries its own bearer token, which says which agent it
//! acts for. This file holds the SQLite side; `postgres/sessions.rs` the
//! PostgreSQL one.

use rusqlite::{OptionalExtension, params};

use crate::db::ms;
use crate::{SqliteStore, StoreError, now_ms};

impl SqliteStore {
    pub(crate) fn put_session(
        &self,
        id: &str,
        state: &serde_json::Value,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        let conn = self.conn();
        crate::tx::write(&conn, "storing a session", |conn| {
            conn.prepare_cached("DELETE FROM sessions WHERE expires_ms <= ?1")
                .and_then(|mut s| s.execute(params![ms(now_ms())]))
                .map_err(StoreError::sql("clearing expired sessions"))?;
            conn.prepare_cached(
                "INSERT INTO sessions (id, state, expires_ms) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (id) DO UPDATE SET state = excluded.state, expires_ms = excluded.expires_ms",
            )
            .and_then(|mut s| s.execute(params![id, state.to_string(), ms(expires_ms)]))
            .map_err(StoreError::sql("storing a session"))?;
            Ok(())
        })
    }

    pub(crate) fn session(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let state: Option<String> = self
            .conn()
            .prepare_cached("SELECT state FROM sessions WHERE id = ?1 AND expires_ms > ?2")
            .and_then(|mut s| {
                s.query_row(params![id, ms(now_ms())], |r| r.get(0))
                    .optional()
            })
            .map_err(StoreError::sql("reading a session"))?;
        state
            .map(|s| serde_json::from_str(&s).map_err(StoreError::data("reading a session")))
            .transpose()
    }

    pub(crate) fn drop_session(&self, id: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("DELETE FROM sessions WHERE id = ?1")
            .and_then(|mut s| s.execute(params![id]))
            .map(|_| ())
            .map_err(StoreError::sql("ending a session"))
    }
}
