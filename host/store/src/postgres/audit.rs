//! The audit chains in PostgreSQL: the same records, links, tags and
//! checkpoint signatures as the SQLite chain (`chain.rs`,
//! `checkpoint.rs`), one chain per host key.
//!
//! Attack: as in `chain.rs` — someone with write access to the database
//! editing, deleting, reordering or adding records — plus a second
//! writer racing this one. Every commit that appends locks its chain's
//! row in `audit_chains` first, then reads the head, so two processes with
//! one key never link to the same head; replicas with their own keys
//! append to their own chains without waiting. Appends of concurrent
//! calls share one transaction: a single writer task takes every queued
//! record while the previous commit runs (group commit), and a caller
//! hears back only once the commit holding its record succeeded.

use std::sync::{Arc, Weak};

use sqlx::{PgConnection, Row};
use tokio::sync::{mpsc, oneshot};
use warden_signing::PublicKey;

use super::Inner;
use crate::chain::{Entry, link};
use crate::checkpoint::Head;
use crate::verify::{Stored, Walk};
use crate::{AuditRecord, Break, StoreError, Verified};

/// One queued append and where its outcome goes.
pub(crate) struct Append {
    /// None for a flush: answered once what was queued before it is
    /// committed.
    pub(crate) entry: Option<Entry>,
    pub(crate) reply: oneshot::Sender<Result<u64, String>>,
}

/// Queues `entry` for the group-commit writer and waits for the commit
/// holding it; returns its sequence number.
pub(crate) async fn append_queued(inner: &Inner, entry: Entry) -> Result<u64, StoreError> {
    queued(inner, Some(entry)).await
}

/// Queues `entry` for the writer without waiting: it commits at once,
/// whether or not anyone hears back.
pub(crate) fn append_later(inner: &Inner, entry: Entry) -> Result<(), StoreError> {
    let (reply, _) = oneshot::channel();
    inner
        .appends
        .send(Append {
            entry: Some(entry),
            reply,
        })
        .map_err(|_| StoreError::AuditCommit {
            detail: "the audit writer stopped".into(),
        })
}

/// Waits until everything queued so far is committed.
pub(crate) async fn flush(inner: &Inner) -> Result<(), StoreError> {
    queued(inner, None).await.map(|_| ())
}

/// Queues `entry` (or a flush) and waits for its commit.
async fn queued(inner: &Inner, entry: Option<Entry>) -> Result<u64, StoreError> {
    let (reply, answer) = oneshot::channel();
    let stopped = || StoreError::AuditCommit {
        detail: "the audit writer stopped".into(),
    };
    inner
        .appends
        .send(Append { entry, reply })
        .map_err(|_| stopped())?;
    answer
        .await
        .map_err(|_| stopped())?
        .map_err(|detail| StoreError::AuditCommit { detail })
}

/// The most records one commit takes from the queue.
const BATCH: usize = 4096;

/// The group-commit writer: runs until the store goes.
pub(crate) async fn writer(inner: Weak<Inner>, mut queue: mpsc::UnboundedReceiver<Append>) {
    let mut batch = Vec::new();
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        let Some(inner) = inner.upgrade() else {
            break;
        };
        // Each reply with its record's index in the commit (a flush's
        // is the next record's, which it reports nothing about).
        let mut entries = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        for append in batch.drain(..) {
            replies.push((entries.len() as u64, append.reply));
            entries.extend(append.entry);
        }
        let first = if entries.is_empty() {
            Ok(0)
        } else {
            commit(&inner, &entries).await.map_err(|e| e.to_string())
        };
        for (i, reply) in replies {
            // A caller that went away (a cancelled call, a record nobody
            // waits for) needs no answer; its record is committed all the
            // same.
            let _ = reply.send(first.clone().map(|first| first + i));
        }
    }
}

/// Appends `entries` in a transaction of their own.
async fn commit(inner: &Inner, entries: &[Entry]) -> Result<u64, StoreError> {
    let failed = StoreError::pg("committing audit records");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let first = append_in(&mut tx, inner, entries).await?;
    tx.commit()
        .await
        .map_err(StoreError::pg("committing audit records"))?;
    Ok(first)
}

/// Locks this host's chain and returns its head, inside the transaction
/// open on `conn`.
async fn lock_head(conn: &mut PgConnection, inner: &Inner) -> Result<Option<Head>, StoreError> {
    sqlx::query("SELECT chain FROM audit_chains WHERE chain = $1 FOR UPDATE")
        .bind(&inner.chain)
        .fetch_one(&mut *conn)
        .await
        .map_err(StoreError::pg("locking the audit chain"))?;
    let row = sqlx::query(
        "SELECT seq, hash, tag, signature FROM audit WHERE chain = $1 ORDER BY seq DESC LIMIT 1",
    )
    .bind(&inner.chain)
    .fetch_optional(&mut *conn)
    .await
    .map_err(StoreError::pg("reading the audit head"))?;
    row.map(|r| {
        Ok(Head {
            seq: r.try_get::<i64, _>(0)? as u64,
            hash: r.try_get(1)?,
            tag: r.try_get(2)?,
            signature: r.try_get(3)?,
        })
    })
    .transpose()
    .map_err(StoreError::pg("reading the audit head"))
}

/// Appends `entries` after this host's chain head inside the transaction
/// open on `conn`; returns the first one's sequence number (0 for none).
pub(crate) async fn append_in(
    conn: &mut PgConnection,
    inner: &Inner,
    entries: &[Entry],
) -> Result<u64, StoreError> {
    if entries.is_empty() {
        return Ok(0);
    }
    let head = inner.cover.accept_head(lock_head(conn, inner).await?)?;
    let rows = link(&inner.cover, entries, head);
    let mut columns = (
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
        Vec::with_capacity(rows.len()),
    );
    let first = rows.first().map_or(0, |r| r.seq);
    for row in rows {
        columns.0.push(row.seq as i64);
        columns.1.push(row.at_ms as i64);
        columns.2.push(row.kind.to_owned());
        columns.3.push(row.body);
        columns.4.push(row.prev);
        columns.5.push(row.hash);
        columns.6.push(row.signature);
        columns.7.push(row.tag);
    }
    sqlx::query(
        "INSERT INTO audit (chain, seq, at_ms, kind, body, prev, hash, key_id, signature, tag) \
         SELECT $1, s, a, k, b, p, h, $2, g, t FROM UNNEST($3::bigint[], $4::bigint[], $5::text[], \
         $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) AS u(s, a, k, b, p, h, g, t)",
    )
    .bind(&inner.chain)
    .bind(inner.cover.key_id())
    .bind(columns.0)
    .bind(columns.1)
    .bind(columns.2)
    .bind(columns.3)
    .bind(columns.4)
    .bind(columns.5)
    .bind(columns.6)
    .bind(columns.7)
    .execute(&mut *conn)
    .await
    .map_err(StoreError::pg("appending an audit record"))?;
    Ok(first)
}

/// Records of this host's chain with `seq > after`, oldest first.
pub(crate) async fn records_after(
    inner: Arc<Inner>,
    after: u64,
    limit: u64,
) -> Result<Vec<AuditRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT seq, at_ms, kind, body, prev, hash, key_id, signature, tag FROM audit \
         WHERE chain = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(&inner.chain)
    .bind(after.min(i64::MAX as u64) as i64)
    .bind(limit.min(i64::MAX as u64) as i64)
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg("reading the audit log"))?;
    records(&rows)
}

/// Audit rows (the columns in table order) as records.
fn records(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<AuditRecord>, StoreError> {
    rows.iter()
        .map(|r| {
            let body: String = r.try_get(3)?;
            Ok(AuditRecord {
                seq: r.try_get::<i64, _>(0)? as u64,
                at_ms: r.try_get::<i64, _>(1)? as u64,
                kind: r.try_get(2)?,
                event: serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body)),
                prev: r.try_get(4)?,
                hash: r.try_get(5)?,
                key_id: r.try_get(6)?,
                signature: r.try_get(7)?,
                tag: r.try_get(8)?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(StoreError::pg("reading the audit log"))
}

/// The highest sequence number of `chain` (0 when it has no records).
pub(crate) async fn last_seq(inner: &Inner, chain: &str) -> Result<u64, StoreError> {
    let last: i64 = sqlx::query("SELECT coalesce(max(seq), 0) FROM audit WHERE chain = $1")
        .bind(chain)
        .fetch_one(&inner.pool)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(StoreError::pg("reading the audit head"))?;
    Ok(last as u64)
}

/// Signs this host's chain head if it carries no signature yet.
pub(crate) async fn seal(inner: Arc<Inner>) -> Result<Option<u64>, StoreError> {
    let failed = StoreError::pg("sealing the audit chain");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let Some(head) = lock_head(&mut tx, &inner).await? else {
        return Ok(None);
    };
    if !head.signature.is_empty() {
        return Ok(None);
    }
    inner.cover.check_covered(&head)?;
    let Some(hash) = crate::chain::unhex::<32>(&head.hash) else {
        return Err(StoreError::UncoveredAuditHead { seq: head.seq });
    };
    let signature = inner.cover.seal_head(&hash, &head.hash);
    sqlx::query("UPDATE audit SET signature = $3, key_id = $4 WHERE chain = $1 AND seq = $2")
        .bind(&inner.chain)
        .bind(head.seq as i64)
        .bind(signature)
        .bind(inner.cover.key_id())
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg("sealing the audit chain"))?;
    tx.commit()
        .await
        .map_err(StoreError::pg("sealing the audit chain"))?;
    Ok(Some(head.seq))
}

/// A row of the walk's query as the walk reads it.
fn stored(row: &sqlx::postgres::PgRow) -> Result<Stored, sqlx::Error> {
    Ok(Stored {
        seq: row.try_get::<i64, _>(0)? as u64,
        at: row.try_get::<i64, _>(1)? as u64,
        body: row.try_get(2)?,
        prev: row.try_get(3)?,
        hash: row.try_get(4)?,
        signature: row.try_get(5)?,
        tag: row.try_get(6)?,
    })
}

/// How many records the walk reads at a time.
const PAGE: i64 = 10_000;

/// Walks the chain of `key` (its key id) page by page.
pub(crate) async fn verify(
    inner: Arc<Inner>,
    key: PublicKey,
    tag_key: Option<[u8; 32]>,
) -> Result<Result<Verified, Break>, StoreError> {
    let chain = key.key_id().as_str().to_owned();
    let last = last_seq(&inner, &chain).await?;
    let mut walk = Walk::new(last, &key, tag_key);
    let mut after = 0i64;
    loop {
        let rows = sqlx::query(
            "SELECT seq, at_ms, body, prev, hash, signature, tag FROM audit \
             WHERE chain = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(&chain)
        .bind(after)
        .bind(PAGE)
        .fetch_all(&inner.pool)
        .await
        .map_err(StoreError::pg("reading the audit log"))?;
        let Some(end) = rows.last() else {
            break;
        };
        after = end
            .try_get(0)
            .map_err(StoreError::pg("reading the audit log"))?;
        for row in &rows {
            let stored = stored(row).map_err(StoreError::pg("reading the audit log"))?;
            if let Err(broken) = walk.step(stored) {
                return Ok(Err(broken));
            }
        }
    }
    Ok(walk.finish())
}
