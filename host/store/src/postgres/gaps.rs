//! The gap log in PostgreSQL (the meaning: `gaps.rs`).

use std::sync::Arc;

use sqlx::Row;

use super::data::text;
use super::{Inner, audit};
use crate::StoreError;
use crate::chain::Entry;
use crate::db::ms;
use crate::gaps::{
    GapCounts, GapRule, GapSummary, GapTally, NewGap, announced_within, recurring_event, summarise,
    window_start,
};

pub(crate) async fn record(
    inner: Arc<Inner>,
    gap: NewGap,
    rule: GapRule,
) -> Result<GapTally, StoreError> {
    let what = "recording a capability gap";
    let mut tx = inner.pool.begin().await.map_err(StoreError::pg(what))?;
    // One writer at a time, so two replicas never both announce a gap.
    sqlx::query("LOCK TABLE gap_recurring IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg(what))?;
    let id: i64 = sqlx::query(
        "INSERT INTO gaps (signature, agent, session, asked, at_ms) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id",
    )
    .bind(&gap.signature)
    .bind(gap.agent.as_bytes())
    .bind(gap.session.as_bytes())
    .bind(gap.asked.as_bytes())
    .bind(ms(gap.at_ms))
    .fetch_one(&mut *tx)
    .await
    .and_then(|r| r.try_get(0))
    .map_err(StoreError::pg(what))?;
    sqlx::query("DELETE FROM gaps WHERE id <= $1")
        .bind(id.saturating_sub(ms(rule.capacity)))
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg(what))?;
    let announced: Option<i64> =
        sqlx::query("SELECT recurring_ms FROM gap_recurring WHERE signature = $1")
            .bind(&gap.signature)
            .fetch_optional(&mut *tx)
            .await
            .map_err(StoreError::pg(what))?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(StoreError::pg(what))?;
    let tally = if announced_within(&gap, &rule, announced.map(|a| a as u64)) {
        GapTally::announced(&gap)
    } else if !recurring(&mut tx, &gap, &rule)
        .await
        .map_err(StoreError::pg(what))?
    {
        GapTally::short(&gap)
    } else {
        let row = sqlx::query(
            "SELECT count(*), count(DISTINCT session) FROM gaps \
             WHERE signature = $1 AND at_ms > $2",
        )
        .bind(&gap.signature)
        .bind(ms(window_start(&gap, &rule)))
        .fetch_one(&mut *tx)
        .await
        .map_err(StoreError::pg(what))?;
        let counts = GapCounts {
            occurrences: row.try_get::<i64, _>(0).map_err(StoreError::pg(what))? as u64,
            sessions: row.try_get::<i64, _>(1).map_err(StoreError::pg(what))? as u64,
        };
        sqlx::query(
            "INSERT INTO gap_recurring (signature, recurring_ms) VALUES ($1, $2) \
             ON CONFLICT (signature) DO UPDATE SET recurring_ms = excluded.recurring_ms",
        )
        .bind(&gap.signature)
        .bind(ms(gap.at_ms))
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg(what))?;
        audit::append_in(
            &mut tx,
            &inner,
            &[Entry::new(
                &recurring_event(&gap.signature, counts),
                gap.at_ms,
            )?],
        )
        .await?;
        GapTally::became(&gap, counts)
    };
    tx.commit().await.map_err(StoreError::pg(what))?;
    Ok(tally)
}

/// Whether `gap`'s signature is recurring in the window, read only as
/// far as `rule` needs (as `gaps.rs` reads it from SQLite).
async fn recurring(
    tx: &mut sqlx::PgConnection,
    gap: &NewGap,
    rule: &GapRule,
) -> Result<bool, sqlx::Error> {
    let since = ms(window_start(gap, rule));
    let rows: i64 = sqlx::query(
        "SELECT count(*) FROM \
         (SELECT 1 FROM gaps WHERE signature = $1 AND at_ms > $2 LIMIT $3) AS kept",
    )
    .bind(&gap.signature)
    .bind(since)
    .bind(ms(rule.threshold))
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    if (rows as u64) < rule.threshold {
        return Ok(false);
    }
    let mut sessions = 0;
    // PostgreSQL has no min() of bytes: the first in the index's order.
    let mut next: Option<Vec<u8>> =
        sqlx::query("SELECT session FROM gaps WHERE signature = $1 ORDER BY session LIMIT 1")
            .bind(&gap.signature)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| r.try_get(0))
            .transpose()?;
    while let Some(session) = next
        && sessions < rule.min_sessions
    {
        let last: Option<i64> =
            sqlx::query("SELECT max(at_ms) FROM gaps WHERE signature = $1 AND session = $2")
                .bind(&gap.signature)
                .bind(&session)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        if last.is_some_and(|last| last > since) {
            sessions += 1;
        }
        next = sqlx::query(
            "SELECT session FROM gaps WHERE signature = $1 AND session > $2 \
             ORDER BY session LIMIT 1",
        )
        .bind(&gap.signature)
        .bind(&session)
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| r.try_get(0))
        .transpose()?;
    }
    Ok(sessions >= rule.min_sessions)
}

pub(crate) async fn list(
    inner: Arc<Inner>,
    now_ms: u64,
    rule: GapRule,
) -> Result<Vec<GapSummary>, StoreError> {
    let what = "reading the capability gaps";
    let rows = sqlx::query(
        "SELECT signature, agent, session, asked, at_ms FROM gaps WHERE at_ms > $1 ORDER BY id",
    )
    .bind(ms(now_ms.saturating_sub(rule.window_ms)))
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg(what))?;
    let text = |r: &sqlx::postgres::PgRow, i: usize| text(r.try_get(i)?);
    let rows = rows
        .iter()
        .map(|r| {
            Ok((
                r.try_get(0)?,
                text(r, 1)?,
                text(r, 2)?,
                text(r, 3)?,
                r.try_get::<i64, _>(4)? as u64,
            ))
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
        .map_err(StoreError::pg(what))?;
    Ok(summarise(rows, &rule))
}
