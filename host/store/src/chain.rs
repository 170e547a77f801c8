//! The audit chain's format and its one append path.
//!
//! Attack: someone with write access to the database (or a copy of it)
//! editing, deleting, reordering or adding records to hide or invent what
//! the host did. Every record's hash covers its position, time, body and
//! the previous record's hash, so the chain is one hash-linked sequence;
//! the last record of every transaction that appends records carries a
//! tag (an HMAC under a key derived from the host key) of its hash, and
//! at checkpoints the host key's signature of it, either of which so
//! covers every record up to it (`checkpoint.rs`). Without the key nobody
//! can end a chain they changed with a valid tag or signature;
//! `verify.rs` checks all of it.
//!
//! Chains written before schema version 4 signed every commit, and before
//! version 3 every record: valid chains of this format too, their
//! signatures covering what tags cover now.

use rusqlite::{Connection, params};
use warden_api::AuditEvent;

use crate::checkpoint::{Cover, Marks};
use crate::{SqliteStore, StoreError};

/// The `prev` of the first record.
pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A record ready to append: serialised by its caller, outside any lock.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) kind: &'static str,
    pub(crate) body: String,
    pub(crate) at_ms: u64,
}

impl Entry {
    pub(crate) fn new(event: &AuditEvent, at_ms: u64) -> Result<Entry, StoreError> {
        Ok(Entry {
            kind: kind(event),
            body: serde_json::to_string(event)
                .map_err(StoreError::data("writing an audit record"))?,
            at_ms,
        })
    }
}

/// The `kind` column of `event`'s record.
pub(crate) fn kind(event: &AuditEvent) -> &'static str {
    match event {
        AuditEvent::Decision { .. } => "decision",
        AuditEvent::Approval { .. } => "approval",
        AuditEvent::Outcome { .. } => "outcome",
        AuditEvent::RuleAdded { .. } => "rule-added",
        AuditEvent::Grant { .. } => "grant",
        AuditEvent::Trust { .. } => "trust",
        AuditEvent::ResponseRefused { .. } => "response-refused",
        AuditEvent::PluginRemoved { .. } => "plugin-removed",
        AuditEvent::DefinitionsPinned { .. } => "definitions-pinned",
        AuditEvent::DefinitionsUnpinned { .. } => "definitions-unpinned",
        AuditEvent::ChainHeads { .. } => "chain-heads",
        AuditEvent::GapRecurring { .. } => "gap-recurring",
        AuditEvent::BlueprintMoved { .. } => "blueprint-moved",
    }
}

/// What a record's hash covers: its position, time, link and body.
pub(crate) fn digest(seq: u64, at_ms: u64, prev: &str, body: &str) -> [u8; 32] {
    warden_signing::sha256(format!("warden-audit-v1\n{seq}\n{at_ms}\n{prev}\n{body}").as_bytes())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
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

/// A record as stored, linked and covered.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) seq: u64,
    pub(crate) at_ms: u64,
    pub(crate) kind: &'static str,
    pub(crate) body: String,
    pub(crate) prev: String,
    pub(crate) hash: String,
    pub(crate) signature: String,
    pub(crate) tag: String,
}

/// Links `entries` after `head` (`(seq, hash)` of the chain's last
/// record, accepted by [`Cover::accept_head`]), the last one tagged and at
/// a checkpoint signed: the rows one commit appends, for any backend.
pub(crate) fn link(cover: &Cover, entries: &[Entry], head: Option<(u64, String)>) -> Vec<Row> {
    let (first, mut prev) = head.map_or((1, GENESIS.to_owned()), |(seq, hash)| (seq + 1, hash));
    let mut rows = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let seq = first + i as u64;
        let digest = digest(seq, entry.at_ms, &prev, &entry.body);
        let hash = hex(&digest);
        let marks = if i + 1 == entries.len() {
            cover.mark(&digest, &hash, entries.len() as u64)
        } else {
            Marks {
                tag: String::new(),
                signature: String::new(),
            }
        };
        rows.push(Row {
            seq,
            at_ms: entry.at_ms,
            kind: entry.kind,
            body: entry.body.clone(),
            prev: std::mem::replace(&mut prev, hash.clone()),
            hash,
            signature: marks.signature,
            tag: marks.tag,
        });
    }
    rows
}

impl SqliteStore {
    /// Appends `entries` after the chain's head inside the write
    /// transaction open on `conn` ([`link`]); returns the first one's
    /// sequence number (nothing is written for no entries). The head is
    /// read here, in the transaction, because another process
    /// (`warden grants`, `warden call`) may have appended since.
    pub(crate) fn append_in(
        &self,
        conn: &Connection,
        entries: &[Entry],
    ) -> Result<u64, StoreError> {
        let rows = link(&self.cover, entries, self.covered_head(conn)?);
        let mut insert = conn
            .prepare_cached(self.cover.insert_sql())
            .map_err(StoreError::sql("appending an audit record"))?;
        let key_id = self.cover.key_id();
        for row in &rows {
            let (seq, at) = (row.seq as i64, row.at_ms as i64);
            let inserted = if self.cover.tagged() {
                insert.execute(params![
                    seq,
                    at,
                    row.kind,
                    row.body,
                    row.prev,
                    row.hash,
                    key_id,
                    row.signature,
                    row.tag
                ])
            } else {
                insert.execute(params![
                    seq,
                    at,
                    row.kind,
                    row.body,
                    row.prev,
                    row.hash,
                    key_id,
                    row.signature
                ])
            };
            inserted.map_err(StoreError::sql("appending an audit record"))?;
        }
        Ok(rows.first().map_or(0, |r| r.seq))
    }

    /// Appends `events`, all at `at_ms`, inside the write transaction
    /// open on `conn`: the audit records of a change committed with it.
    pub(crate) fn audit_in<'e>(
        &self,
        conn: &Connection,
        events: impl IntoIterator<Item = &'e AuditEvent>,
        at_ms: u64,
    ) -> Result<(), StoreError> {
        let entries = events
            .into_iter()
            .map(|event| Entry::new(event, at_ms))
            .collect::<Result<Vec<_>, _>>()?;
        self.append_in(conn, &entries).map(|_| ())
    }

    /// Appends `entries` in one transaction of their own, which records
    /// `mark` when they come from a pending log.
    pub(crate) fn commit_entries(
        &self,
        entries: &[Entry],
        mark: Option<&crate::writer::Mark>,
    ) -> Result<u64, StoreError> {
        let conn = self.conn();
        crate::tx::write(&conn, "appending audit records", |conn| {
            let first = self.append_in(conn, entries)?;
            if let Some((file, end)) = mark {
                crate::pending::mark_in(conn, file, *end)?;
            }
            Ok(first)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = hex(&bytes);
        assert_eq!(&text[..6], "000102");
        assert_eq!(&text[text.len() - 4..], "feff");
        let back: [u8; 32] = unhex(&text[..64]).unwrap();
        assert_eq!(&back[..], &bytes[..32]);
        assert_eq!(unhex::<2>("0g00"), None);
        assert_eq!(unhex::<2>("000"), None);
    }
}
