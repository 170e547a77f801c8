//! What covers the audit chain's head: a tag on every commit, a signature
//! at checkpoints, and the refusal to vouch for a head the host did not
//! write.
//!
//! Attacks: (1) someone who can write the database but not read the host
//! key edits records and recomputes their hashes, or appends records of
//! their own; (2) the same person appends records and waits for the host
//! to append after them, so that the host's own tag or signature, which
//! covers everything before it through the hash links, vouches for the
//! forged records too.
//!
//! Every commit's last record carries a tag: the HMAC-SHA256 of its hash
//! under a key derived from the host key (microseconds), so records
//! committed between checkpoints are as well protected against (1) as
//! signed ones, for a verifier holding the host key. An ed25519 signature
//! (tens of microseconds, verifiable with the public key alone) is made
//! only at checkpoints: on a commit when [`SIGN_EVERY_RECORDS`] records or
//! [`SIGN_EVERY`] have passed since this store's last one (so a process
//! that commits once signs that commit), and by [`SqliteStore::seal`], which a
//! serving host runs on a timer and at shutdown to sign a head left
//! unsigned. Against (2), nothing is ever appended after, or signed on, a
//! head that carries neither a valid tag nor a valid signature of this
//! key: the append fails and names the record.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use warden_signing::SecretKey;

use crate::chain::{hex, unhex};
use crate::{SqliteStore, StoreError};

/// A commit is signed once this many records have been committed since
/// the last signature this store made.
pub const SIGN_EVERY_RECORDS: u64 = 1024;
/// A commit is signed once this long has passed since the last signature
/// this store made; a serving host seals an idle head as often.
pub const SIGN_EVERY: Duration = Duration::from_secs(1);

/// The schema version whose audit table has the `tag` column; a store
/// opened at an older one (migration tests) signs every commit, as that
/// version did.
pub(crate) const TAGGED_SINCE: u32 = 4;

/// What the key derived for audit tags is for.
const TAG_PURPOSE: &str = "audit-chain-tag";

/// The keys that cover the chain's head, and this store's checkpoint
/// state.
pub(crate) struct Cover {
    /// The host key: signs checkpoints, and the tag key derives from it.
    key: SecretKey,
    /// The key's id, stored with every record.
    key_id: String,
    tag_key: [u8; 32],
    /// Whether the table has the `tag` column.
    tagged: bool,
    /// When a commit is signed: records, and time, since the last
    /// signature.
    every: (u64, Duration),
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When this store last signed, and how many records it committed since.
    signed: Option<(Instant, u64)>,
    /// The hash of the last head this store wrote or checked: appending
    /// after it needs no check.
    known_head: Option<String>,
}

/// The tag of a record's hash under `tag_key`.
fn tag(tag_key: &[u8; 32], hash: &[u8; 32]) -> [u8; 32] {
    warden_signing::hmac_sha256(tag_key, hash)
}

/// The tag key derived from the host key.
pub(crate) fn tag_key(key: &warden_signing::SecretKey) -> [u8; 32] {
    key.derive_key(TAG_PURPOSE)
}

/// Whether `text` is the tag of `hash` under `tag_key`.
pub(crate) fn tag_valid(tag_key: &[u8; 32], hash: &[u8; 32], text: &str) -> bool {
    unhex::<32>(text).is_some_and(|t| warden_signing::verify_hmac_sha256(tag_key, hash, &t))
}

/// The chain's last record as stored.
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) hash: String,
    pub(crate) tag: String,
    pub(crate) signature: String,
}

/// How a commit's last record is covered.
pub(crate) struct Marks {
    pub(crate) tag: String,
    pub(crate) signature: String,
}

impl std::fmt::Debug for Cover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cover").finish_non_exhaustive()
    }
}

impl Cover {
    pub(crate) fn new(key: SecretKey, tagged: bool) -> Cover {
        Cover {
            tag_key: tag_key(&key),
            key_id: key.public().key_id().as_str().to_owned(),
            key,
            tagged,
            every: (SIGN_EVERY_RECORDS, SIGN_EVERY),
            state: Mutex::new(State::default()),
        }
    }

    /// The HMAC of a pending audit frame (`pending.rs`), under the tag
    /// key: only this host key makes one.
    pub(crate) fn pending_mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        warden_signing::hmac_sha256_parts(&self.tag_key, parts)
    }

    /// Whether `mac` is [`Cover::pending_mac`] of `parts`.
    pub(crate) fn pending_mac_valid(&self, parts: &[&[u8]], mac: &[u8]) -> bool {
        warden_signing::verify_hmac_sha256_parts(&self.tag_key, parts, mac)
    }

    pub(crate) fn tagged(&self) -> bool {
        self.tagged
    }

    pub(crate) fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The insert of one record.
    pub(crate) fn insert_sql(&self) -> &'static str {
        if self.tagged {
            "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature, tag) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        } else {
            "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn read_head(conn: &Connection, tagged: bool) -> Result<Option<Head>, StoreError> {
    let sql = if tagged {
        "SELECT seq, hash, tag, signature FROM audit ORDER BY seq DESC LIMIT 1"
    } else {
        "SELECT seq, hash, '', signature FROM audit ORDER BY seq DESC LIMIT 1"
    };
    conn.prepare_cached(sql)
        .and_then(|mut stmt| {
            stmt.query_row([], |r| {
                Ok(Head {
                    seq: r.get::<_, i64>(0)? as u64,
                    hash: r.get(1)?,
                    tag: r.get(2)?,
                    signature: r.get(3)?,
                })
            })
            .optional()
        })
        .map_err(StoreError::sql("reading the audit head"))
}

impl Cover {
    /// The chain's head as `(seq, hash)`, read in the write transaction
    /// that appends after it, once this host is known to have covered it
    /// (a tag or signature of this key): checked unless it is the head
    /// this store last wrote or checked.
    pub(crate) fn accept_head(
        &self,
        head: Option<Head>,
    ) -> Result<Option<(u64, String)>, StoreError> {
        let Some(head) = head else {
            return Ok(None);
        };
        if self.lock().known_head.as_deref() != Some(head.hash.as_str()) {
            self.check_covered(&head)?;
            self.lock().known_head = Some(head.hash.clone());
        }
        Ok(Some((head.seq, head.hash)))
    }

    pub(crate) fn check_covered(&self, head: &Head) -> Result<(), StoreError> {
        let covered = unhex::<32>(&head.hash).is_some_and(|hash| {
            tag_valid(&self.tag_key, &hash, &head.tag)
                || unhex::<64>(&head.signature).is_some_and(|s| self.key.public().verify(&hash, &s))
        });
        if covered {
            Ok(())
        } else {
            Err(StoreError::UncoveredAuditHead { seq: head.seq })
        }
    }

    /// The tag, and at a checkpoint the signature, for the last record of
    /// a commit of `records` records whose hash is `hash` (`hash_hex` as
    /// stored); remembers it as the head.
    pub(crate) fn mark(&self, hash: &[u8; 32], hash_hex: &str, records: u64) -> Marks {
        let (every_records, every) = self.every;
        let mut state = self.lock();
        let due = match &mut state.signed {
            Some((at, since)) => {
                *since += records;
                *since >= every_records || at.elapsed() >= every || !self.tagged
            }
            None => true,
        };
        let signature = if due {
            state.signed = Some((Instant::now(), 0));
            hex(&self.key.sign(hash))
        } else {
            String::new()
        };
        state.known_head = Some(hash_hex.to_owned());
        Marks {
            tag: hex(&tag(&self.tag_key, hash)),
            signature,
        }
    }

    /// The signature of a head being sealed, `hash_hex` as stored; the
    /// head counts as signed now.
    pub(crate) fn seal_head(&self, hash: &[u8; 32], hash_hex: &str) -> String {
        let signature = hex(&self.key.sign(hash));
        let mut state = self.lock();
        state.signed = Some((Instant::now(), 0));
        state.known_head = Some(hash_hex.to_owned());
        signature
    }
}

impl SqliteStore {
    /// The chain's head inside the write transaction open on `conn`, as
    /// [`Cover::accept_head`] accepts it.
    pub(crate) fn covered_head(
        &self,
        conn: &Connection,
    ) -> Result<Option<(u64, String)>, StoreError> {
        self.cover.accept_head(read_head(conn, self.cover.tagged)?)
    }

    /// Signs at checkpoints of `records` records or `every` instead of
    /// the defaults: tests that need a signature where they expect one.
    #[cfg(test)]
    pub(crate) fn checkpoints(mut self, records: u64, every: Duration) -> SqliteStore {
        self.cover.every = (records, every);
        self
    }

    /// Signs the chain's head if it carries no signature yet, so that
    /// the whole chain verifies with the public key alone; returns the
    /// sequence number it signed. A head this host did not cover is not
    /// signed (the error names it). A serving host calls this every
    /// [`SIGN_EVERY`] and when it stops.
    pub fn seal(&self) -> Result<Option<u64>, StoreError> {
        // Records queued without a waiter are part of what is sealed.
        crate::writer::block_on(self.flush_grouped())?;
        let conn = self.conn();
        crate::tx::write(&conn, "sealing the audit chain", |conn| {
            let Some(head) = read_head(conn, self.cover.tagged)? else {
                return Ok(None);
            };
            if !head.signature.is_empty() {
                return Ok(None);
            }
            self.cover.check_covered(&head)?;
            let Some(hash) = unhex::<32>(&head.hash) else {
                return Err(StoreError::UncoveredAuditHead { seq: head.seq });
            };
            let signature = self.cover.seal_head(&hash, &head.hash);
            conn.prepare_cached("UPDATE audit SET signature = ?2, key_id = ?3 WHERE seq = ?1")
                .and_then(|mut stmt| {
                    stmt.execute(params![head.seq as i64, signature, self.cover.key_id])
                })
                .map_err(StoreError::sql("sealing the audit chain"))?;
            Ok(Some(head.seq))
        })
    }
}
