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

    /// Queues `event` for the next commit without waiting for it; true
    /// when the caller must arrange [`SqliteStore::flush_appends`] soon.
    /// Under "normal" durability the record is in the pending log when
    /// this returns, so a killed host loses none; under "full" it may
    /// lose those queued since the last commit.
    pub fn append_later(&self, event: &AuditEvent) -> Result<bool, StoreError> {
        self.queue_later(Entry::new(event, now_ms())?)
    }

    /// Appends `event` and returns once it is durable: queued behind the
    /// pending log when the store keeps one (`durability = "normal"`),
    /// with true when the caller must arrange
    /// [`SqliteStore::flush_appends`] soon; else committed
    /// ([`SqliteStore::append_async`]), with false.
    pub async fn append_durable(&self, event: &AuditEvent) -> Result<bool, StoreError> {
        self.append_durable_grouped(Entry::new(event, now_ms())?)
            .await
    }

    /// Commits the records [`SqliteStore::append_later`] queued.
    pub async fn flush_appends(&self) -> Result<(), StoreError> {
        self.flush_grouped().await
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
        self.commit_entries(&entries, None)
    }

    /// Records with `seq > after`, oldest first, at most `limit`.
    pub fn records_after(&self, after: u64, limit: u64) -> Result<Vec<AuditRecord>, StoreError> {
        self.select(
            "SELECT seq, at_ms, kind, body, prev, hash, key_id, signature, tag FROM audit \
             WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            params![after as i64, limit.min(i64::MAX as u64) as i64],
        )
    }

    /// The records `sql` selects (the audit columns in table order).
    fn select(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let read = || StoreError::sql("reading the audit log");
        // What was queued before the read is part of the log it reads.
        crate::writer::block_on(self.flush_grouped())?;
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(sql).map_err(read())?;
        let rows = stmt
            .query_map(params, |r| {
                let body: String = r.get(3)?;
                Ok(AuditRecord {
                    seq: r.get::<_, i64>(0)? as u64,
                    at_ms: r.get::<_, i64>(1)? as u64,
                    kind: r.get(2)?,
                    event: serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body)),
                    prev: r.get(4)?,
                    hash: r.get(5)?,
                    key_id: r.get(6)?,
                    signature: r.get(7)?,
                    tag: r.get(8)?,
                })
            })
            .map_err(read())?;
        rows.collect::<Result<_, _>>().map_err(read())
    }

    /// The last `n` records, oldest first.
    pub fn tail(&self, n: u64) -> Result<Vec<AuditRecord>, StoreError> {
        // The head read below includes what was queued before the call.
        crate::writer::block_on(self.flush_grouped())?;
        let last: i64 = self
            .conn()
            .query_row("SELECT coalesce(max(seq), 0) FROM audit", [], |r| r.get(0))
            .map_err(StoreError::sql("reading the audit head"))?;
        self.records_after((last as u64).saturating_sub(n), n)
    }
}
