//! The toolsmith's gap log: unfulfilled requests (a call to a tool that
//! does not exist, a capability request for a tool nobody offers), each a
//! `domain:action` signature with who asked, kept in a ring of bounded
//! size (the oldest rows go first). A signature is recurring once it was
//! asked for a threshold of times within a window, from at least a number
//! of distinct sessions: one session repeating itself counts once toward
//! the sessions, so no single session makes a gap recurring. The first
//! time a signature is recurring within a window is audited
//! (`gap-recurring`). This file holds the SQLite side and the types;
//! `postgres/gaps.rs` the PostgreSQL one.
//!
//! Attack: an agent flooding the log to push others' gaps out or to fake
//! demand, or looping on a missing tool so that each refused request
//! costs the host more than the last. The ring bounds the rows, demand
//! needs distinct sessions, and whether a signature recurs is read only
//! as far as the rule needs (the full count runs once per window, when
//! it does), so a request costs the same however full the ring is.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use warden_api::AuditEvent;

use crate::chain::Entry;
use crate::db::ms;
use crate::{SqliteStore, StoreError};

/// One unfulfilled request, as the gap log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewGap {
    /// `domain:action`.
    pub signature: String,
    pub agent: String,
    pub session: String,
    /// What was asked for (the unknown tool's name, or the capability).
    pub asked: String,
    pub at_ms: u64,
}

/// When a signature is recurring, and how many rows the ring keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapRule {
    pub capacity: u64,
    pub threshold: u64,
    pub window_ms: u64,
    pub min_sessions: u64,
}

/// A signature's standing after a gap was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GapTally {
    pub signature: String,
    /// Its requests within the window, counted in full when this request
    /// made it recurring (once per window); `None` otherwise, when only
    /// as many rows and sessions were read as the rule needs.
    pub counts: Option<GapCounts>,
    /// Whether the signature is recurring.
    pub recurring: bool,
    /// Whether this request made it recurring (and it was audited).
    pub became_recurring: bool,
}

/// A signature's requests within the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GapCounts {
    pub occurrences: u64,
    /// Distinct sessions among them.
    pub sessions: u64,
}

impl GapTally {
    /// A request for a signature already announced within the window:
    /// kept in the log, not counted. Nothing it could add changes the
    /// outcome (the window has its announcement).
    pub(crate) fn announced(gap: &NewGap) -> GapTally {
        GapTally {
            signature: gap.signature.clone(),
            counts: None,
            recurring: true,
            became_recurring: false,
        }
    }

    /// A request that left its signature short of recurring.
    pub(crate) fn short(gap: &NewGap) -> GapTally {
        GapTally {
            signature: gap.signature.clone(),
            counts: None,
            recurring: false,
            became_recurring: false,
        }
    }

    /// The request that made its signature recurring, with the window's
    /// `counts`.
    pub(crate) fn became(gap: &NewGap, counts: GapCounts) -> GapTally {
        GapTally {
            signature: gap.signature.clone(),
            counts: Some(counts),
            recurring: true,
            became_recurring: true,
        }
    }
}

/// Whether `gap`'s signature, last announced at `announced_ms`, was
/// announced within the window that ends with `gap`.
pub(crate) fn announced_within(gap: &NewGap, rule: &GapRule, announced_ms: Option<u64>) -> bool {
    announced_ms.is_some_and(|at| at > window_start(gap, rule))
}

/// Where the window that ends with `gap` begins (exclusive).
pub(crate) fn window_start(gap: &NewGap, rule: &GapRule) -> u64 {
    gap.at_ms.saturating_sub(rule.window_ms)
}

pub(crate) fn recurring_event(signature: &str, counts: GapCounts) -> AuditEvent {
    AuditEvent::GapRecurring {
        signature: signature.to_owned(),
        occurrences: counts.occurrences,
        sessions: counts.sessions,
    }
}

/// One signature of the log, as `warden toolsmith gaps` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GapSummary {
    pub signature: String,
    /// Requests kept in the ring within the window.
    pub occurrences: u64,
    pub sessions: u64,
    pub agents: Vec<String>,
    /// What was asked for, each once.
    pub asked: Vec<String>,
    pub first_ms: u64,
    pub last_ms: u64,
    pub recurring: bool,
}

/// Folds rows `(signature, agent, session, asked, at_ms)` of the window
/// into one summary per signature.
pub(crate) fn summarise(
    rows: Vec<(String, String, String, String, u64)>,
    rule: &GapRule,
) -> Vec<GapSummary> {
    use std::collections::{BTreeMap, BTreeSet};
    #[derive(Default)]
    struct Acc {
        n: u64,
        sessions: BTreeSet<String>,
        agents: BTreeSet<String>,
        asked: BTreeSet<String>,
        first: u64,
        last: u64,
    }
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    for (signature, agent, session, asked, at) in rows {
        let acc = by.entry(signature).or_default();
        acc.first = if acc.n == 0 { at } else { acc.first.min(at) };
        acc.last = acc.last.max(at);
        acc.n += 1;
        acc.sessions.insert(session);
        acc.agents.insert(agent);
        acc.asked.insert(asked);
    }
    by.into_iter()
        .map(|(signature, a)| GapSummary {
            signature,
            occurrences: a.n,
            sessions: a.sessions.len() as u64,
            recurring: a.n >= rule.threshold && a.sessions.len() as u64 >= rule.min_sessions,
            agents: a.agents.into_iter().collect(),
            asked: a.asked.into_iter().collect(),
            first_ms: a.first,
            last_ms: a.last,
        })
        .collect()
}

/// Whether `gap`'s signature is recurring in the window, read only as
/// far as `rule` needs: `threshold` rows at most, and the signature's
/// sessions one index step each until `min_sessions` of them asked within
/// the window. A full count would read every row of the signature in the
/// ring, which one session repeating a missing tool fills; its requests
/// can never make the gap recurring alone, and so never end in the count
/// that runs once per window when one does.
fn recurring_sqlite(
    conn: &rusqlite::Connection,
    gap: &NewGap,
    rule: &GapRule,
) -> Result<bool, rusqlite::Error> {
    let since = ms(window_start(gap, rule));
    // The limit is written into the statement: SQLite prepares a
    // statement again whenever a parameter of its LIMIT is bound.
    let rows: i64 = conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM \
             (SELECT 1 FROM gaps WHERE signature = ?1 AND at_ms > ?2 LIMIT {})",
            rule.threshold
        ))?
        .query_row(params![gap.signature, since], |r| r.get(0))?;
    if (rows as u64) < rule.threshold {
        return Ok(false);
    }
    // Each parameter is compared through a cast: SQLite peeks at a bare
    // parameter's value while it plans a min() or an ORDER BY over the
    // index, and then prepares the statement again at every binding.
    let mut sessions = 0;
    let mut next: Option<String> = conn
        .prepare_cached(
            "SELECT session FROM gaps WHERE signature = CAST(?1 AS TEXT) \
             ORDER BY session LIMIT 1",
        )?
        .query_row(params![gap.signature], |r| r.get(0))
        .optional()?;
    while let Some(session) = next
        && sessions < rule.min_sessions
    {
        let last: Option<i64> = conn
            .prepare_cached(
                "SELECT max(at_ms) FROM gaps \
                 WHERE signature = CAST(?1 AS TEXT) AND session = CAST(?2 AS TEXT)",
            )?
            .query_row(params![gap.signature, session], |r| r.get(0))?;
        if last.is_some_and(|last| last > since) {
            sessions += 1;
        }
        next = conn
            .prepare_cached(
                "SELECT session FROM gaps \
                 WHERE signature = CAST(?1 AS TEXT) AND session > CAST(?2 AS TEXT) \
                 ORDER BY session LIMIT 1",
            )?
            .query_row(params![gap.signature, session], |r| r.get(0))
            .optional()?;
    }
    Ok(sessions >= rule.min_sessions)
}

impl SqliteStore {
    pub(crate) fn record_gap(&self, gap: &NewGap, rule: &GapRule) -> Result<GapTally, StoreError> {
        let what = "recording a capability gap";
        let conn = self.conn();
        crate::tx::write(&conn, what, |conn| {
            let sql = StoreError::sql(what);
            conn.prepare_cached(
                "INSERT INTO gaps (signature, agent, session, asked, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    gap.signature,
                    gap.agent,
                    gap.session,
                    gap.asked,
                    ms(gap.at_ms)
                ])
            })
            .map_err(sql)?;
            let id = conn.last_insert_rowid();
            conn.prepare_cached("DELETE FROM gaps WHERE id <= ?1")
                .and_then(|mut s| s.execute(params![id.saturating_sub(ms(rule.capacity))]))
                .map_err(StoreError::sql(what))?;
            let announced: Option<i64> = conn
                .prepare_cached("SELECT recurring_ms FROM gap_recurring WHERE signature = ?1")
                .and_then(|mut s| s.query_row(params![gap.signature], |r| r.get(0)).optional())
                .map_err(StoreError::sql(what))?;
            if announced_within(gap, rule, announced.map(|a| a as u64)) {
                return Ok(GapTally::announced(gap));
            }
            if !recurring_sqlite(conn, gap, rule).map_err(StoreError::sql(what))? {
                return Ok(GapTally::short(gap));
            }
            let counts = conn
                .prepare_cached(
                    "SELECT count(*), count(DISTINCT session) FROM gaps \
                     WHERE signature = ?1 AND at_ms > ?2",
                )
                .and_then(|mut s| {
                    s.query_row(params![gap.signature, ms(window_start(gap, rule))], |r| {
                        Ok(GapCounts {
                            occurrences: r.get::<_, i64>(0)? as u64,
                            sessions: r.get::<_, i64>(1)? as u64,
                        })
                    })
                })
                .map_err(StoreError::sql(what))?;
            conn.prepare_cached(
                "INSERT INTO gap_recurring (signature, recurring_ms) VALUES (?1, ?2) \
                 ON CONFLICT (signature) DO UPDATE SET recurring_ms = excluded.recurring_ms",
            )
            .and_then(|mut s| s.execute(params![gap.signature, ms(gap.at_ms)]))
            .map_err(StoreError::sql(what))?;
            let event = recurring_event(&gap.signature, counts);
            self.append_in(conn, &[Entry::new(&event, gap.at_ms)?])?;
            Ok(GapTally::became(gap, counts))
        })
    }

    pub(crate) fn gaps(&self, now_ms: u64, rule: &GapRule) -> Result<Vec<GapSummary>, StoreError> {
        let what = "reading the capability gaps";
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT signature, agent, session, asked, at_ms FROM gaps WHERE at_ms > ?1 ORDER BY id",
            )
            .map_err(StoreError::sql(what))?;
        let rows = stmt
            .query_map(params![ms(now_ms.saturating_sub(rule.window_ms))], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get::<_, i64>(4)? as u64,
                ))
            })
            .and_then(Iterator::collect)
            .map_err(StoreError::sql(what))?;
        Ok(summarise(rows, rule))
    }
}
