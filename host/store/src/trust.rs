//! Trust state per agent, as the trust strategy serialises it.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use warden_api::AuditEvent;

use crate::{SqliteStore, StoreError, now_ms};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredTrust {
    pub agent: String,
    pub state: serde_json::Value,
    pub updated_ms: u64,
}

impl SqliteStore {
    pub fn trust(&self, agent: &str) -> Result<Option<StoredTrust>, StoreError> {
        let row: Option<(String, i64)> = self
            .conn()
            .query_row(
                "SELECT state, updated_ms FROM trust WHERE agent = ?1",
                params![agent],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(StoreError::sql("reading trust"))?;
        row.map(|(state, at)| {
            Ok(StoredTrust {
                agent: agent.to_owned(),
                state: serde_json::from_str(&state).map_err(StoreError::data("reading trust"))?,
                updated_ms: at as u64,
            })
        })
        .transpose()
    }

    /// Replaces an agent's trust state; `changes` (level changes) are
    /// audited in the same transaction.
    pub fn put_trust(
        &self,
        agent: &str,
        state: &serde_json::Value,
        changes: &[AuditEvent],
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("writing trust"))?;
        let now = now_ms();
        tx.execute(
            "INSERT INTO trust (agent, state, updated_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT (agent) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms",
            params![agent, state.to_string(), now as i64],
        )
        .map_err(StoreError::sql("writing trust"))?;
        self.audit_in(&tx, changes, now)?;
        tx.commit().map_err(StoreError::sql("writing trust"))
    }
}
