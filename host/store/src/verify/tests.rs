//! The audit chain from the attacker's side: someone who can write the
//! database file, knows its format, but does not hold the host key.
//! `verify` is the host's check (tags and signatures, `warden audit
//! verify`); `verify_public` is a verifier with the public key alone.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, params};
use warden_signing::SecretKey;

use crate::tests::{key, open, outcome, raw};
use crate::{Break, SqliteStore, StoreError};

/// A store whose commits are signed only when the test seals them (or
/// the first one, as every store signs its first commit).
fn unsealed(dir: &Path) -> SqliteStore {
    open(dir).checkpoints(u64::MAX, Duration::from_secs(3600))
}

/// A chain of three commits: records 1-2, 3-6 and 7. Only 2, 6 and 7
/// carry a tag; only 2, the store's first commit, a signature.
fn commits(dir: &Path) -> SqliteStore {
    let store = unsealed(dir);
    store.append_batch(&[outcome(1), outcome(2)]).unwrap();
    store
        .append_batch(&[outcome(3), outcome(4), outcome(5), outcome(6)])
        .unwrap();
    store.append(&outcome(7)).unwrap();
    store
}

/// [`commits`] with its head sealed: 7 signed too.
fn sealed(dir: &Path) -> SqliteStore {
    let store = commits(dir);
    assert_eq!(store.seal().unwrap(), Some(7));
    store
}

fn verify(dir: &Path, store: &SqliteStore) -> Result<crate::Verified, Break> {
    store.verify_with_host_key(&key(dir)).unwrap()
}

fn verify_public(dir: &Path, store: &SqliteStore) -> Result<crate::Verified, Break> {
    store.verify(&key(dir).public()).unwrap()
}

fn column(conn: &Connection, name: &str, seq: i64) -> String {
    conn.query_row(
        &format!("SELECT {name} FROM audit WHERE seq = ?1"),
        params![seq],
        |r| r.get(0),
    )
    .unwrap()
}

fn marked(conn: &Connection, name: &str) -> Vec<i64> {
    let last: i64 = conn
        .query_row("SELECT max(seq) FROM audit", [], |r| r.get(0))
        .unwrap();
    (1..=last)
        .filter(|&s| !column(conn, name, s).is_empty())
        .collect()
}

/// The attacker's own implementation of the record hash, from the format.
fn forged_hash(seq: i64, at: i64, prev: &str, body: &str) -> String {
    let hash =
        warden_signing::sha256(format!("warden-audit-v1\n{seq}\n{at}\n{prev}\n{body}").as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rewrites record `seq` with `body`, linked to `prev`, its hash
/// recomputed (its tag and signature left as they were); returns the new
/// hash.
fn rewrite(conn: &Connection, seq: i64, body: &str, prev: &str) -> String {
    let at: i64 = conn
        .query_row(
            "SELECT at_ms FROM audit WHERE seq = ?1",
            params![seq],
            |r| r.get(0),
        )
        .unwrap();
    let hash = forged_hash(seq, at, prev, body);
    conn.execute(
        "UPDATE audit SET body = ?2, prev = ?3, hash = ?4 WHERE seq = ?1",
        params![seq, body, prev, hash],
    )
    .unwrap();
    hash
}

fn hash_of(conn: &Connection, seq: i64) -> String {
    column(conn, "hash", seq)
}

fn body(n: u64) -> String {
    serde_json::to_string(&outcome(n)).unwrap()
}

/// Appends a record made up by the attacker after the last one, with
/// `tag` and `signature` (copied from elsewhere, or empty).
fn append_forged(conn: &Connection, seq: i64, tag: &str, signature: &str) {
    let prev = hash_of(conn, seq - 1);
    let body = body(99);
    let hash = forged_hash(seq, 5, &prev, &body);
    conn.execute(
        "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature, tag) \
         VALUES (?1, 5, 'outcome', ?2, ?3, ?4, 'k', ?5, ?6)",
        params![seq, body, prev, hash, signature, tag],
    )
    .unwrap();
}

#[test]
fn an_untouched_chain_verifies_with_a_tag_per_commit_and_signed_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let verified = verify(dir.path(), &store).unwrap();
    assert_eq!(
        (verified.records, verified.tags, verified.signatures),
        (7, 3, 1)
    );
    assert_eq!(verified.signed_through, 2);
    let conn = raw(dir.path());
    assert_eq!(verified.head, hash_of(&conn, 7));
    assert_eq!(marked(&conn, "tag"), vec![2, 6, 7]);
    assert_eq!(marked(&conn, "signature"), vec![2]);
    // The public key alone reaches the last checkpoint only.
    let broken = verify_public(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::Unsigned { first: 3, last: 7 });
    assert!(broken.to_string().contains("host key"), "{broken}");

    // Sealing signs the head (once), and then the public key verifies all.
    assert_eq!(store.seal().unwrap(), Some(7));
    assert_eq!(store.seal().unwrap(), None);
    assert_eq!(marked(&conn, "signature"), vec![2, 7]);
    let public = verify_public(dir.path(), &store).unwrap();
    assert_eq!((public.records, public.signatures, public.tags), (7, 2, 0));
    assert_eq!(public.signed_through, 7);
    assert_eq!(verify(dir.path(), &store).unwrap().signatures, 2);
}

#[test]
fn commits_are_signed_every_so_many_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).checkpoints(3, Duration::from_secs(3600));
    for n in 1..=8 {
        store.append(&outcome(n)).unwrap();
    }
    let conn = raw(dir.path());
    assert_eq!(marked(&conn, "signature"), vec![1, 4, 7]);
    assert_eq!(marked(&conn, "tag"), (1..=8).collect::<Vec<_>>());
    // And every so often.
    let store = open(dir.path()).checkpoints(u64::MAX, Duration::ZERO);
    store.append(&outcome(9)).unwrap();
    store.append(&outcome(10)).unwrap();
    assert_eq!(marked(&conn, "signature"), vec![1, 4, 7, 9, 10]);
    assert!(verify(dir.path(), &store).is_ok());
    assert!(verify_public(dir.path(), &store).is_ok());
}

#[test]
fn an_edited_record_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    raw(dir.path())
        .execute(
            "UPDATE audit SET body = replace(body, '\"ok\":true', '\"ok\":false') WHERE seq IN (4, 5)",
            [],
        )
        .unwrap();
    assert!(matches!(
        verify(dir.path(), &store),
        Err(Break::Edited { seq: 4, .. })
    ));
}

/// Records 4 to 6 rewritten and relinked, and 7 relinked: every hash and
/// link is right, only the tag on 6 and the signature on 7 (which the
/// attacker cannot redo) are not.
fn rewrite_second_commit(dir: &Path) {
    let conn = raw(dir);
    let mut prev = hash_of(&conn, 3);
    for seq in 4..=6 {
        prev = rewrite(&conn, seq, &body(90 + seq as u64), &prev);
    }
    rewrite(&conn, 7, &body(7), &prev);
}

#[test]
fn a_commit_rewritten_with_hashes_recomputed_fails_its_tag() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    rewrite_second_commit(dir.path());
    let broken = verify(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::BadTag { first: 3, last: 6 });
    assert!(broken.to_string().contains("records 3 to 6"), "{broken}");
}

#[test]
fn a_commit_rewritten_with_hashes_recomputed_fails_the_next_signature() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed(dir.path());
    rewrite_second_commit(dir.path());
    let broken = verify_public(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::BadSignature { first: 3, last: 7 });
    assert!(broken.to_string().contains("records 3 to 7"), "{broken}");
}

#[test]
fn one_record_rewritten_with_its_hash_recomputed_breaks_the_next_link() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let conn = raw(dir.path());
    let prev = hash_of(&conn, 3);
    rewrite(&conn, 4, &body(44), &prev);
    assert_eq!(verify(dir.path(), &store), Err(Break::Unlinked { seq: 5 }));
}

#[test]
fn a_rewritten_tagged_or_signed_record_fails_its_tag_or_signature() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed(dir.path());
    let conn = raw(dir.path());
    rewrite(&conn, 7, &body(77), &hash_of(&conn, 6));
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadTag { first: 7, last: 7 })
    );
    assert_eq!(
        verify_public(dir.path(), &store),
        Err(Break::BadSignature { first: 3, last: 7 })
    );
}

#[test]
fn records_appended_without_the_key_are_uncovered() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed(dir.path());
    let conn = raw(dir.path());
    append_forged(&conn, 8, "", "");
    append_forged(&conn, 9, "", "");
    let broken = verify(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::Uncovered { first: 8, last: 9 });
    assert!(
        broken.to_string().contains("no tag or signature"),
        "{broken}"
    );
    assert_eq!(
        verify_public(dir.path(), &store),
        Err(Break::Unsigned { first: 8, last: 9 })
    );
}

#[test]
fn a_tag_or_signature_replayed_onto_a_forged_record_fails() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed(dir.path());
    let conn = raw(dir.path());
    append_forged(&conn, 8, &column(&conn, "tag", 7), "");
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadTag { first: 8, last: 8 })
    );
    conn.execute(
        "UPDATE audit SET tag = '', signature = ?1 WHERE seq = 8",
        params![column(&conn, "signature", 7)],
    )
    .unwrap();
    assert_eq!(
        verify_public(dir.path(), &store),
        Err(Break::BadSignature { first: 8, last: 8 })
    );
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadSignature { first: 8, last: 8 })
    );
}

#[test]
fn a_covered_record_replayed_at_the_end_is_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    // Record 2 (tagged and signed, ending the first commit) copied whole
    // after 7.
    raw(dir.path())
        .execute(
            "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature, tag) \
             SELECT 8, at_ms, kind, body, prev, hash, key_id, signature, tag FROM audit WHERE seq = 2",
            [],
        )
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Reordered { seq: 8, belongs: 2 })
    );
}

#[test]
fn a_tail_cut_inside_a_commit_is_uncovered() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    // Cut after record 5: the tag on 6 that covered 3 to 5 is gone.
    raw(dir.path())
        .execute("DELETE FROM audit WHERE seq >= 6", [])
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Uncovered { first: 3, last: 5 })
    );
}

#[test]
fn a_stripped_tag_or_signature_at_the_end_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed(dir.path());
    let conn = raw(dir.path());
    conn.execute("UPDATE audit SET signature = '' WHERE seq = 7", [])
        .unwrap();
    assert_eq!(
        verify_public(dir.path(), &store),
        Err(Break::Unsigned { first: 3, last: 7 })
    );
    conn.execute("UPDATE audit SET tag = '' WHERE seq = 7", [])
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Uncovered { first: 7, last: 7 })
    );
}

#[test]
fn a_deleted_commit_or_record_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    raw(dir.path())
        .execute("DELETE FROM audit WHERE seq = 4", [])
        .unwrap();
    let broken = verify(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::Deleted { seq: 4, next: 5 });
    assert!(broken.to_string().contains("record 4 was deleted"));

    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    raw(dir.path())
        .execute("DELETE FROM audit WHERE seq BETWEEN 3 AND 6", [])
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Deleted { seq: 3, next: 7 })
    );
}

#[test]
fn reordered_records_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    // Swap records 3 and 5 wholesale (everything but their position).
    raw(dir.path())
        .execute_batch(
            "UPDATE audit SET seq = -3 WHERE seq = 3;
             UPDATE audit SET seq = 3 WHERE seq = 5;
             UPDATE audit SET seq = 5 WHERE seq = -3;",
        )
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Reordered { seq: 3, belongs: 5 })
    );
}

#[test]
fn another_key_fails_the_first_tag_and_signature() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let other = SecretKey::generate().unwrap();
    assert_eq!(
        store.verify_with_host_key(&other).unwrap(),
        Err(Break::BadTag { first: 1, last: 2 })
    );
    assert_eq!(
        store.verify(&other.public()).unwrap(),
        Err(Break::BadSignature { first: 1, last: 2 })
    );
}

/// The one thing the chain cannot show by itself: a cut at a tagged
/// record leaves a shorter valid chain. The head printed by an earlier
/// verify, kept elsewhere, is then no longer in it.
#[test]
fn a_tail_cut_at_a_tagged_record_needs_the_anchored_head() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let anchored = verify(dir.path(), &store).unwrap().head;
    raw(dir.path())
        .execute("DELETE FROM audit WHERE seq = 7", [])
        .unwrap();
    let shorter = verify(dir.path(), &store).unwrap();
    assert_eq!(shorter.records, 6);
    assert_ne!(shorter.head, anchored);
    assert!(
        store
            .records_after(0, 100)
            .unwrap()
            .iter()
            .all(|r| r.hash != anchored)
    );
}

/// The attack on the host itself: records appended without the key, then
/// left for the host to append after (or seal), so that its own tag or
/// signature would vouch for them. It refuses, naming the record, and
/// writes nothing; a fresh store (another process) refuses too.
#[test]
fn the_host_never_appends_after_or_signs_a_head_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let conn = raw(dir.path());
    append_forged(&conn, 8, "", "");
    let err = store.append(&outcome(9)).unwrap_err();
    assert!(
        matches!(&err, StoreError::AuditCommit { detail } if detail.contains("last record (8)")),
        "{err}"
    );
    let err = store.seal().unwrap_err();
    assert!(
        matches!(err, StoreError::UncoveredAuditHead { seq: 8 }),
        "{err}"
    );
    let again = unsealed(dir.path());
    assert!(again.add_rule("a", "fs_read", None, None).is_err());
    assert!(again.seal().is_err());
    assert_eq!(marked(&conn, "signature"), vec![2]);
    let count: i64 = conn
        .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 8);

    // A tag copied from a genuine record does not cover a forged head.
    conn.execute(
        "UPDATE audit SET tag = ?1 WHERE seq = 8",
        params![column(&conn, "tag", 7)],
    )
    .unwrap();
    assert!(store.append(&outcome(9)).is_err());
    assert!(store.seal().is_err());

    // Once the operator removes the forged record, the host goes on.
    conn.execute("DELETE FROM audit WHERE seq = 8", []).unwrap();
    assert_eq!(store.append(&outcome(8)).unwrap(), 8);
    assert!(verify(dir.path(), &store).is_ok());
}

/// Rows exactly as wardens before schema version 3 wrote them: every
/// record signed.
fn old_chain(dir: &Path, n: i64) {
    let db = dir.join("warden.db");
    drop(SqliteStore::open_at(&db, key(dir), 2).unwrap());
    let secret = key(dir);
    let conn = raw(dir);
    let mut prev = "0".repeat(64);
    for seq in 1..=n {
        let body = body(seq as u64);
        let hash = forged_hash(seq, 1000 + seq, &prev, &body);
        let raw_hash: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&hash[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let signature: String = secret
            .sign(&raw_hash)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        conn.execute(
            "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature) \
             VALUES (?1, ?2, 'outcome', ?3, ?4, ?5, ?6, ?7)",
            params![
                seq,
                1000 + seq,
                body,
                prev,
                hash,
                secret.public().key_id().as_str(),
                signature
            ],
        )
        .unwrap();
        prev = hash;
    }
}

#[test]
fn a_chain_signed_record_by_record_opens_verifies_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    old_chain(dir.path(), 4);
    let store = open(dir.path());
    assert_eq!(store.schema_version().unwrap(), crate::SCHEMA_VERSION);
    let verified = verify(dir.path(), &store).unwrap();
    assert_eq!((verified.records, verified.signatures), (4, 4));
    assert_eq!(verify_public(dir.path(), &store), Ok(verified));

    // Appended after the old records: the first commit signed and tagged,
    // the second tagged.
    let store = store.checkpoints(u64::MAX, Duration::from_secs(3600));
    store
        .append_batch(&[outcome(5), outcome(6), outcome(7)])
        .unwrap();
    store.append(&outcome(8)).unwrap();
    let verified = verify(dir.path(), &store).unwrap();
    assert_eq!(
        (verified.records, verified.signatures, verified.tags),
        (8, 5, 2)
    );

    // The old records keep their own protection.
    let conn = raw(dir.path());
    rewrite(&conn, 2, &body(22), &hash_of(&conn, 1));
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadSignature { first: 2, last: 2 })
    );
}
