//! The audit chain: every record holds the hash of the one before it and
//! is signed with the host's key.
//!
//! Attack: someone with write access to the database (or a copy of it)
//! editing, deleting or reordering what the host did, to hide a call or a
//! decision. Editing a record breaks its hash or, if the hash is redone,
//! its signature; deleting or reordering breaks the sequence or the link
//! to the previous hash. `verify` names the first record that fails.
//! Removing records from the end leaves a shorter valid chain: anchor the
//! head (`warden audit verify` prints it) outside the host to detect that.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;
use warden_api::{AuditEvent, JournalError};
use warden_signing::{PublicKey, sha256};

use crate::{Store, StoreError, now_ms};

const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One stored record.
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
}

/// The first problem `verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
pub enum Break {
    /// Record `seq` is missing: the one before it is followed by a later one.
    Deleted { seq: u64, next: u64 },
    /// Record `seq`'s content does not match its hash or signature.
    Edited { seq: u64, detail: String },
    /// The record at `seq` is a genuine record that belongs at `belongs`.
    Reordered { seq: u64, belongs: u64 },
    /// Record `seq` does not link to the one before it.
    Unlinked { seq: u64 },
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Break::Deleted { seq, next } => write!(
                f,
                "record {seq} was deleted (the chain goes from {} to {next})",
                seq.saturating_sub(1)
            ),
            Break::Edited { seq, detail } => write!(f, "record {seq} was edited: {detail}"),
            Break::Reordered { seq, belongs } => write!(
                f,
                "record {seq} is out of order: it holds record {belongs} (records were reordered or deleted)"
            ),
            Break::Unlinked { seq } => write!(
                f,
                "record {seq} does not follow record {}: a record between them was deleted or replaced",
                seq.saturating_sub(1)
            ),
        }
    }
}

/// What a successful verification covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    pub records: u64,
    /// The hash of the last record: anchor it elsewhere to detect truncation.
    pub head: String,
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, chunk) in text.as_bytes().chunks(2).enumerate() {
        let pair = std::str::from_utf8(chunk).ok()?;
        out[i] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// What the hash covers: the position, the time, the link and the body.
fn digest(seq: u64, at_ms: u64, prev: &str, body: &str) -> [u8; 32] {
    sha256(format!("warden-audit-v1\n{seq}\n{at_ms}\n{prev}\n{body}").as_bytes())
}

fn kind(event: &AuditEvent) -> &'static str {
    match event {
        AuditEvent::Decision { .. } => "decision",
        AuditEvent::Approval { .. } => "approval",
        AuditEvent::Outcome { .. } => "outcome",
        AuditEvent::RuleAdded { .. } => "rule-added",
        AuditEvent::Grant { .. } => "grant",
        AuditEvent::Trust { .. } => "trust",
        AuditEvent::ResponseRefused { .. } => "response-refused",
        AuditEvent::PluginRemoved { .. } => "plugin-removed",
    }
}

impl Store {
    /// Appends a record inside `tx`; returns its sequence number.
    pub(crate) fn append_in(
        &self,
        tx: &Transaction<'_>,
        event: &AuditEvent,
        at_ms: u64,
    ) -> Result<u64, StoreError> {
        let body =
            serde_json::to_string(event).map_err(StoreError::data("writing an audit record"))?;
        let last: Option<(i64, String)> = tx
            .query_row(
                "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(StoreError::sql("reading the audit head"))?;
        let (seq, prev) = match last {
            Some((seq, hash)) => (seq as u64 + 1, hash),
            None => (1, GENESIS.to_owned()),
        };
        let hash = digest(seq, at_ms, &prev, &body);
        let signature = self.key.sign(&hash);
        tx.execute(
            "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                seq as i64,
                at_ms as i64,
                kind(event),
                body,
                prev,
                hex(&hash),
                self.key.public().key_id().as_str(),
                hex(&signature)
            ],
        )
        .map_err(StoreError::sql("appending an audit record"))?;
        Ok(seq)
    }

    /// Appends one record in its own transaction.
    pub fn append(&self, event: &AuditEvent) -> Result<u64, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("starting an audit append"))?;
        let seq = self.append_in(&tx, event, now_ms())?;
        tx.commit()
            .map_err(StoreError::sql("committing an audit append"))?;
        Ok(seq)
    }

    /// Records with `seq > after`, oldest first, at most `limit`.
    pub fn records_after(&self, after: u64, limit: u64) -> Result<Vec<AuditRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, at_ms, kind, body, prev, hash, key_id, signature FROM audit \
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
                    ))
                },
            )
            .map_err(StoreError::sql("reading the audit log"))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at, kind, body, prev, hash, key_id, signature) =
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

    /// Walks the whole chain, checking every link, hash and signature
    /// against `key`; the first break is the error.
    pub fn verify(&self, key: &PublicKey) -> Result<Result<Verified, Break>, StoreError> {
        let conn = self.conn();
        let last: i64 = conn
            .query_row("SELECT coalesce(max(seq), 0) FROM audit", [], |r| r.get(0))
            .map_err(StoreError::sql("reading the audit head"))?;
        let mut stmt = conn
            .prepare("SELECT seq, at_ms, body, prev, hash, signature FROM audit ORDER BY seq")
            .map_err(StoreError::sql("reading the audit log"))?;
        let mut rows = stmt
            .query([])
            .map_err(StoreError::sql("reading the audit log"))?;
        let mut expected = 1u64;
        let mut prev_hash = GENESIS.to_owned();
        while let Some(row) = rows
            .next()
            .map_err(StoreError::sql("reading the audit log"))?
        {
            let read = |i| row.get::<_, String>(i);
            let seq = row
                .get::<_, i64>(0)
                .map_err(StoreError::sql("reading the audit log"))? as u64;
            let at = row
                .get::<_, i64>(1)
                .map_err(StoreError::sql("reading the audit log"))? as u64;
            let (body, prev, hash, signature) = (|| Ok((read(2)?, read(3)?, read(4)?, read(5)?)))()
                .map_err(StoreError::sql("reading the audit log"))?;
            let record = Checked {
                at,
                body: &body,
                prev: &prev,
                hash: &hash,
                signature: &signature,
            };
            if let Some(broken) = record.check(seq, expected, &prev_hash, key, last as u64) {
                return Ok(Err(broken));
            }
            expected = seq + 1;
            prev_hash = hash;
        }
        Ok(Ok(Verified {
            records: expected - 1,
            head: prev_hash,
        }))
    }
}

struct Checked<'a> {
    at: u64,
    body: &'a str,
    prev: &'a str,
    hash: &'a str,
    signature: &'a str,
}

impl Checked<'_> {
    fn check(
        &self,
        seq: u64,
        expected: u64,
        prev_hash: &str,
        key: &PublicKey,
        last: u64,
    ) -> Option<Break> {
        let signed = match (unhex::<32>(self.hash), unhex::<64>(self.signature)) {
            (Some(h), Some(s)) => key.verify(&h, &s).then_some(h),
            _ => None,
        };
        let Some(stored) = signed else {
            return Some(Break::Edited {
                seq,
                detail: "its signature does not match its hash (or the host key)".into(),
            });
        };
        if digest(seq, self.at, self.prev, self.body) != stored {
            // A genuine record in the wrong place still hashes at its own
            // position; anything else was edited.
            let belongs = (1..=last.max(seq).saturating_add(1))
                .find(|&s| s != seq && digest(s, self.at, self.prev, self.body) == stored);
            return Some(match belongs {
                Some(belongs) => Break::Reordered { seq, belongs },
                None => Break::Edited {
                    seq,
                    detail: "its content does not match its hash".into(),
                },
            });
        }
        if seq != expected {
            return Some(Break::Deleted {
                seq: expected,
                next: seq,
            });
        }
        if self.prev != prev_hash {
            return Some(Break::Unlinked { seq });
        }
        None
    }
}

impl warden_api::Journal for Store {
    fn rule_added(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&warden_api::Attribution>,
    ) -> Result<(), JournalError> {
        self.add_rule(agent, rule, approval, by)
            .map_err(|e| JournalError::with_source("recording a rule", e))
    }

    fn audit(&self, event: &AuditEvent) -> Result<(), JournalError> {
        self.append(event)
            .map(|_| ())
            .map_err(|e| JournalError::with_source("appending to the audit log", e))
    }

    fn audit_args(&self) -> bool {
        Store::audit_args(self)
    }
}
