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

/// One trust change as it was audited, kept beside the chain (the
/// console's trust history) so it is found without walking the chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredTrustChange {
    pub agent: String,
    pub at_ms: u64,
    /// The audited event (`AuditEvent::Trust`) as JSON.
    pub event: serde_json::Value,
}

/// The rows `changes` add to the trust history: each trust event's agent
/// and JSON.
pub(crate) fn history_rows(changes: &[AuditEvent]) -> Result<Vec<(String, String)>, StoreError> {
    changes
        .iter()
        .filter_map(|change| match change {
            AuditEvent::Trust { agent, .. } => Some(
                serde_json::to_string(change)
                    .map(|json| (agent.clone(), json))
                    .map_err(StoreError::data("writing trust")),
            ),
            _ => None,
        })
        .collect()
}

/// Whether the stored state (its text, `None`: no row) is still `prior`,
/// compared as JSON values: another process's write in between makes it
/// differ, and the writer must start again from what is stored.
pub(crate) fn still(
    stored: Option<&str>,
    prior: Option<&serde_json::Value>,
) -> Result<bool, StoreError> {
    match (stored, prior) {
        (None, None) => Ok(true),
        (Some(text), Some(prior)) => {
            let stored: serde_json::Value =
                serde_json::from_str(text).map_err(StoreError::data("reading trust"))?;
            Ok(&stored == prior)
        }
        _ => Ok(false),
    }
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

    /// Replaces an agent's trust state when the stored one is still
    /// `prior` (`None`: none stored); `changes` (level changes) are
    /// audited in the same transaction. `false`: it was not, and nothing
    /// was written.
    pub fn put_trust(
        &self,
        agent: &str,
        prior: Option<&serde_json::Value>,
        state: &serde_json::Value,
        changes: &[AuditEvent],
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("writing trust"))?;
        let stored: Option<String> = tx
            .query_row(
                "SELECT state FROM trust WHERE agent = ?1",
                params![agent],
                |r| r.get(0),
            )
            .optional()
            .map_err(StoreError::sql("writing trust"))?;
        if !still(stored.as_deref(), prior)? {
            return Ok(false);
        }
        let now = now_ms();
        tx.execute(
            "INSERT INTO trust (agent, state, updated_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT (agent) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms",
            params![agent, state.to_string(), now as i64],
        )
        .map_err(StoreError::sql("writing trust"))?;
        self.audit_in(&tx, changes, now)?;
        for (agent, event) in history_rows(changes)? {
            tx.execute(
                "INSERT INTO trust_changes (agent, at_ms, event) VALUES (?1, ?2, ?3)",
                params![agent, now as i64, event],
            )
            .map_err(StoreError::sql("writing trust"))?;
        }
        tx.commit().map_err(StoreError::sql("writing trust"))?;
        Ok(true)
    }

    /// The newest `limit` trust changes of all agents, newest first.
    pub fn trust_changes(&self, limit: u64) -> Result<Vec<StoredTrustChange>, StoreError> {
        let read = || StoreError::sql("reading trust changes");
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT agent, at_ms, event FROM trust_changes ORDER BY id DESC LIMIT ?1",
            )
            .map_err(read())?;
        let rows = stmt
            .query_map(params![limit.min(i64::MAX as u64) as i64], |r| {
                let event: String = r.get(2)?;
                Ok(StoredTrustChange {
                    agent: r.get(0)?,
                    at_ms: r.get::<_, i64>(1)? as u64,
                    event: serde_json::from_str(&event).unwrap_or(serde_json::Value::String(event)),
                })
            })
            .map_err(read())?;
        rows.collect::<Result<_, _>>().map_err(read())
    }
}
