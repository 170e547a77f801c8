//! The audit log as callers see it: appending a record (through group
//! commit, `writer.rs`) and reading records back. The chain's format is
//! in `chain.rs`, its verification in `verify.rs`.

use rusqlite::params;
use serde::Serialize;
use warden_api::AuditEvent;

use crate::chain::Entry;
use crate::{SqliteStore, StoreError, now_ms};

/// One stored record. `tag` is empty on a record that is not the last of
/// its commit (the tag on that last record covers it), and `signature`
/// on one that is not a checkpoint (the next one covers it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    pub seq: u64,
    pub at_ms: u64,
    pub kind: String,
    pub event: serde_json::Value,
    pub prev: String,
    pub hash: String,
    pub key_id: String,
    pub signature: String,
    pub tag: String,
}

impl SqliteStore {
    /// Appends one record, sharing a transaction with records other
    /// threads append at the same time; returns its sequence number once
    /// it is committed.
    pub fn append(&self, event: &AuditEvent) -> Result<u64, StoreError> {
        crate::writer::block_on(self.append_async(event))
    }

    /// [`SqliteStore::append`] for async callers: while another caller's commit
    /// runs, this waits without holding its thread.
    pub async fn append_async(&self, event: &AuditEvent) -> Result<u64, StoreError> {
        self.append_grouped(Entry::new(event, now_ms())?).await
    }

    /// Appends `events` as one commit (one transaction, one tag),
    /// after whatever is already committed: batches for tests, without
    /// racing threads.
    #[cfg(test)]
    pub(crate) fn append_batch(&self, events: &[AuditEvent]) -> Result<u64, StoreError> {
        let at = now_ms();
        let entries = events
            .iter()
            .map(|e| Entry::new(e, at))
            .collect::<Result<Vec<_>, _>>()?;
        self.commit_entries(&entries)
    }

    /// Records with `seq > after`, oldest first, at most `limit`.
    pub fn records_after(&self, after: u64, limit: u64) -> Result<Vec<AuditRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, at_ms, kind, body, prev, hash, key_id, signature, tag FROM audit \
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(StoreError::sql("reading the audit log"))?;
        let rows = stmt
            .query_map(
                params![after as i64, limit.min(i64::MAX as u64) as i64],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, String>(7)?,
                        r.get::<_, String>(8)?,
                    ))
                },
            )
            .map_err(StoreError::sql("reading the audit log"))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at, kind, body, prev, hash, key_id, signature, tag) =
                row.map_err(StoreError::sql("reading the audit log"))?;
            let event = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
            out.push(AuditRecord {
                seq: seq as u64,
                at_ms: at as u64,
                kind,
                event,
                prev,
                hash,
                key_id,
                signature,
                tag,
            });
        }
        Ok(out)
    }

    /// The last `n` records, oldest first.
    pub fn tail(&self, n: u64) -> Result<Vec<AuditRecord>, StoreError> {
        let last: i64 = self
            .conn()
            .query_row("SELECT coalesce(max(seq), 0) FROM audit", [], |r| r.get(0))
            .map_err(StoreError::sql("reading the audit head"))?;
        self.records_after((last as u64).saturating_sub(n), n)
    }
}
