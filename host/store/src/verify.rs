//! Verifying the audit chain (`warden audit verify`).
//!
//! Attack: someone with write access to the database (or a copy of it)
//! editing, deleting, reordering, inserting or appending records, with or
//! without recomputing hashes, or replaying a tagged or signed record
//! elsewhere, to hide or invent what the host did. The walk checks,
//! record by record: its hash against its content and position (an edit,
//! or a genuine record moved to another position), its position against
//! the one before (a deletion), its link to the previous record's hash (a
//! record replaced with its hash recomputed), every signature against the
//! host's public key and, given the host key, every tag (a batch
//! rewritten with its hashes recomputed); a chain must end on a record
//! covered by a tag or a signature (records appended without the key, or
//! a removed tag), and, for a verifier with the public key alone, on a
//! signature. The first failure is the answer, naming the record or the
//! records a tag or signature covers.
//!
//! What it cannot see: records removed from the end at a tagged record
//! leave a shorter valid chain. `Verified::head` is there to be anchored
//! outside the host; a head that is no longer in the chain reveals it.

use rusqlite::Row;
use serde::Serialize;
use warden_signing::{PublicKey, SecretKey};

use crate::chain::{GENESIS, digest, unhex};
use crate::checkpoint::{tag_key, tag_valid};
use crate::{SqliteStore, StoreError};

/// The first problem `verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Break {
    /// Record `seq` is missing: the one before it is followed by a later one.
    Deleted { seq: u64, next: u64 },
    /// Record `seq`'s content does not match its hash.
    Edited { seq: u64, detail: String },
    /// The record at `seq` is a genuine record that belongs at `belongs`.
    Reordered { seq: u64, belongs: u64 },
    /// Record `seq` does not link to the one before it.
    Unlinked { seq: u64 },
    /// The signature on record `last` does not verify for the records
    /// `first..=last` it covers (back to the previous signed record).
    BadSignature { first: u64, last: u64 },
    /// The tag on record `last` does not verify for the records
    /// `first..=last` it covers (back to the previous tag or signature).
    BadTag { first: u64, last: u64 },
    /// Records `first..=last`, at the end of the chain, are covered by no
    /// tag and no signature.
    Uncovered { first: u64, last: u64 },
    /// Records `first..=last`, at the end of the chain, are covered by no
    /// signature (a verifier without the host key cannot check tags).
    Unsigned { first: u64, last: u64 },
}

fn records(first: u64, last: u64) -> String {
    if first == last {
        format!("record {last}")
    } else {
        format!("records {first} to {last}")
    }
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
                "record {seq} does not follow record {}: that record was rewritten with its hash recomputed, \
                 or a record between them was deleted or replaced",
                seq.saturating_sub(1)
            ),
            Break::BadSignature { first, last } => write!(
                f,
                "{} do not match the signature on record {last}: one of them was rewritten with its hash \
                 recomputed, the signature was replaced, or the chain was not signed by this host key",
                records(*first, *last)
            ),
            Break::BadTag { first, last } => write!(
                f,
                "{} do not match the tag on record {last}: one of them was rewritten with its hash \
                 recomputed, the tag was forged or copied, or the chain was not made with this host key",
                records(*first, *last)
            ),
            Break::Uncovered { first, last } => write!(
                f,
                "{} at the end of the chain carry no tag or signature: they were appended without the \
                 host key, or the record that ended their commit was removed",
                records(*first, *last)
            ),
            Break::Unsigned { first, last } => write!(
                f,
                "{} at the end of the chain carry no signature: they were appended without the host key, \
                 or they are the tagged tail of a host that has not signed them yet (a serving host signs \
                 its head within {} s and when it stops); verify with the host key to check their tags",
                records(*first, *last),
                crate::SIGN_EVERY.as_secs()
            ),
        }
    }
}

/// What a successful verification covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Verified {
    pub records: u64,
    /// Signatures checked: one per checkpoint (one per commit in chains
    /// written before schema version 4, one per record before 3).
    pub signatures: u64,
    /// Tags checked, one per commit (none without the host key).
    pub tags: u64,
    /// The last signed record: with the public key alone, the last record.
    pub signed_through: u64,
    /// The hash of the last record: anchor it elsewhere to detect
    /// truncation.
    pub head: String,
}

/// One row as stored, as the walk reads it.
pub(crate) struct Stored {
    pub(crate) seq: u64,
    pub(crate) at: u64,
    pub(crate) body: String,
    pub(crate) prev: String,
    pub(crate) hash: String,
    pub(crate) signature: String,
    pub(crate) tag: String,
}

impl Stored {
    fn read(row: &Row<'_>) -> Result<Stored, rusqlite::Error> {
        Ok(Stored {
            seq: row.get::<_, i64>(0)? as u64,
            at: row.get::<_, i64>(1)? as u64,
            body: row.get(2)?,
            prev: row.get(3)?,
            hash: row.get(4)?,
            signature: row.get(5)?,
            tag: row.get(6)?,
        })
    }
}

/// The walk's position: what the next record must link to, and where the
/// records not yet covered by a signature, or by a tag or signature,
/// start.
pub(crate) struct Walk<'k> {
    expected: u64,
    prev_hash: String,
    unsigned_from: Option<u64>,
    uncovered_from: Option<u64>,
    signatures: u64,
    tags: u64,
    signed_through: u64,
    last: u64,
    public: &'k PublicKey,
    /// The tag key, for a verifier with the host key.
    tag_key: Option<[u8; 32]>,
}

impl Walk<'_> {
    pub(crate) fn step(&mut self, record: Stored) -> Result<(), Break> {
        let seq = record.seq;
        let Some(stored) = unhex::<32>(&record.hash) else {
            return Err(Break::Edited {
                seq,
                detail: "its hash is not 64 hex digits".into(),
            });
        };
        if digest(seq, record.at, &record.prev, &record.body) != stored {
            // A genuine record in the wrong place still hashes at its own
            // position; anything else was edited.
            let belongs = (1..=self.last.max(seq).saturating_add(1))
                .find(|&s| s != seq && digest(s, record.at, &record.prev, &record.body) == stored);
            return Err(match belongs {
                Some(belongs) => Break::Reordered { seq, belongs },
                None => Break::Edited {
                    seq,
                    detail: "its content does not match its hash".into(),
                },
            });
        }
        if seq != self.expected {
            return Err(Break::Deleted {
                seq: self.expected,
                next: seq,
            });
        }
        if record.prev != self.prev_hash {
            return Err(Break::Unlinked { seq });
        }
        let mut covered = false;
        if let Some(tag_key) = &self.tag_key
            && !record.tag.is_empty()
        {
            if !tag_valid(tag_key, &stored, &record.tag) {
                let first = self.uncovered_from.unwrap_or(seq);
                return Err(Break::BadTag { first, last: seq });
            }
            self.tags += 1;
            covered = true;
        }
        if record.signature.is_empty() {
            self.unsigned_from.get_or_insert(seq);
        } else {
            let first = self.unsigned_from.take().unwrap_or(seq);
            let valid =
                unhex::<64>(&record.signature).is_some_and(|s| self.public.verify(&stored, &s));
            if !valid {
                return Err(Break::BadSignature { first, last: seq });
            }
            self.signatures += 1;
            self.signed_through = seq;
            covered = true;
        }
        if covered {
            self.uncovered_from = None;
        } else {
            self.uncovered_from.get_or_insert(seq);
        }
        self.expected = seq + 1;
        self.prev_hash = record.hash;
        Ok(())
    }
}

impl SqliteStore {
    /// Walks the whole chain, checking every record's hash, position and
    /// link and every signature against `key`, and that the chain ends on
    /// a signed record; the first break is the error. Tags need the host
    /// key: see [`SqliteStore::verify_with_host_key`].
    pub fn verify(&self, key: &PublicKey) -> Result<Result<Verified, Break>, StoreError> {
        self.walk(key, None)
    }

    /// [`SqliteStore::verify`] with the host key: every tag is checked too, and
    /// the chain must end on a tagged or signed record, so the records a
    /// host committed since its last checkpoint (a host killed before it
    /// signed them) verify as well.
    pub fn verify_with_host_key(
        &self,
        key: &SecretKey,
    ) -> Result<Result<Verified, Break>, StoreError> {
        self.walk(&key.public(), Some(tag_key(key)))
    }

    fn walk(
        &self,
        key: &PublicKey,
        tag_key: Option<[u8; 32]>,
    ) -> Result<Result<Verified, Break>, StoreError> {
        let read = StoreError::sql("reading the audit log");
        if tag_key.is_some() {
            // With the host key every committed record verifies: what was
            // queued before the call is committed, and checked, too.
            crate::writer::block_on(self.flush_grouped())?;
        }
        let conn = self.conn();
        let last: i64 = conn
            .query_row("SELECT coalesce(max(seq), 0) FROM audit", [], |r| r.get(0))
            .map_err(StoreError::sql("reading the audit head"))?;
        let mut stmt = conn
            .prepare("SELECT seq, at_ms, body, prev, hash, signature, tag FROM audit ORDER BY seq")
            .map_err(read)?;
        let rows = stmt
            .query_map([], Stored::read)
            .map_err(StoreError::sql("reading the audit log"))?
            .map(|row| row.map_err(StoreError::sql("reading the audit log")));
        walk_rows(rows, last as u64, key, tag_key)
    }
}

/// Walks a chain's records, read in order of `seq` from any backend;
/// `last` is the highest `seq` stored. The first break is the answer; an
/// error reading the rows ends the walk.
pub(crate) fn walk_rows<E>(
    rows: impl Iterator<Item = Result<Stored, E>>,
    last: u64,
    key: &PublicKey,
    tag_key: Option<[u8; 32]>,
) -> Result<Result<Verified, Break>, E> {
    let mut walk = Walk::new(last, key, tag_key);
    for row in rows {
        if let Err(broken) = walk.step(row?) {
            return Ok(Err(broken));
        }
    }
    Ok(walk.finish())
}

impl<'k> Walk<'k> {
    /// A walk from the chain's start; `last` is the highest `seq` stored.
    pub(crate) fn new(last: u64, key: &'k PublicKey, tag_key: Option<[u8; 32]>) -> Walk<'k> {
        Walk {
            expected: 1,
            prev_hash: GENESIS.to_owned(),
            unsigned_from: None,
            uncovered_from: None,
            signatures: 0,
            tags: 0,
            signed_through: 0,
            last,
            public: key,
            tag_key,
        }
    }

    /// What the walk of every record covered, or how the chain ends
    /// uncovered.
    pub(crate) fn finish(self) -> Result<Verified, Break> {
        let records = self.expected - 1;
        let tail = if self.tag_key.is_some() {
            self.uncovered_from.map(|first| Break::Uncovered {
                first,
                last: records,
            })
        } else {
            self.unsigned_from.map(|first| Break::Unsigned {
                first,
                last: records,
            })
        };
        match tail {
            Some(broken) => Err(broken),
            None => Ok(Verified {
                records,
                signatures: self.signatures,
                tags: self.tags,
                signed_through: self.signed_through,
                head: self.prev_hash,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
