//! The audit chain from the attacker's side: someone who can write the
//! database file, knows its format, but does not hold the host key.

use std::path::Path;

use rusqlite::{Connection, params};
use warden_signing::SecretKey;

use crate::tests::{key, open, outcome, raw};
use crate::{Break, Store};

/// A chain of three commits: records 1-2, 3-6 and 7. Only 2, 6 and 7
/// carry a signature.
fn commits(dir: &Path) -> Store {
    let store = open(dir);
    store.append_batch(&[outcome(1), outcome(2)]).unwrap();
    store
        .append_batch(&[outcome(3), outcome(4), outcome(5), outcome(6)])
        .unwrap();
    store.append(&outcome(7)).unwrap();
    store
}

fn verify(dir: &Path, store: &Store) -> Result<crate::Verified, Break> {
    store.verify(&key(dir).public()).unwrap()
}

fn signature(conn: &Connection, seq: i64) -> String {
    conn.query_row(
        "SELECT signature FROM audit WHERE seq = ?1",
        params![seq],
        |r| r.get(0),
    )
    .unwrap()
}

/// The attacker's own implementation of the record hash, from the format.
fn forged_hash(seq: i64, at: i64, prev: &str, body: &str) -> String {
    let hash =
        warden_signing::sha256(format!("warden-audit-v1\n{seq}\n{at}\n{prev}\n{body}").as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rewrites record `seq` with `body`, linked to `prev`, its hash
/// recomputed (its signature left as it was); returns the new hash.
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
    conn.query_row("SELECT hash FROM audit WHERE seq = ?1", params![seq], |r| {
        r.get(0)
    })
    .unwrap()
}

fn body(n: u64) -> String {
    serde_json::to_string(&outcome(n)).unwrap()
}

/// Appends a record made up by the attacker after the last one.
fn append_forged(conn: &Connection, seq: i64, signature: &str) {
    let prev = hash_of(conn, seq - 1);
    let body = body(99);
    let hash = forged_hash(seq, 5, &prev, &body);
    conn.execute(
        "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature) \
         VALUES (?1, 5, 'outcome', ?2, ?3, ?4, 'k', ?5)",
        params![seq, body, prev, hash, signature],
    )
    .unwrap();
}

#[test]
fn an_untouched_chain_verifies_with_one_signature_per_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let verified = verify(dir.path(), &store).unwrap();
    assert_eq!((verified.records, verified.signatures), (7, 3));
    let conn = raw(dir.path());
    assert_eq!(verified.head, hash_of(&conn, 7));
    let signed: Vec<i64> = (1..=7)
        .filter(|&s| !signature(&conn, s).is_empty())
        .collect();
    assert_eq!(signed, vec![2, 6, 7]);
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

#[test]
fn a_commit_rewritten_with_hashes_recomputed_fails_its_signature() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let conn = raw(dir.path());
    // Records 4 to 6 rewritten and relinked: every hash and link is right,
    // only the signature on 6 (which the attacker cannot redo) is not.
    let mut prev = hash_of(&conn, 3);
    for seq in 4..=6 {
        prev = rewrite(&conn, seq, &body(90 + seq as u64), &prev);
    }
    // Record 7 relinked too, so the first break is the signature.
    rewrite(&conn, 7, &body(7), &prev);
    let broken = verify(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::BadSignature { first: 3, last: 6 });
    assert!(broken.to_string().contains("records 3 to 6"), "{broken}");
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
fn a_rewritten_signed_record_fails_its_signature() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let conn = raw(dir.path());
    rewrite(&conn, 7, &body(77), &hash_of(&conn, 6));
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadSignature { first: 7, last: 7 })
    );
}

#[test]
fn records_appended_without_the_key_are_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let conn = raw(dir.path());
    append_forged(&conn, 8, "");
    append_forged(&conn, 9, "");
    let broken = verify(dir.path(), &store).unwrap_err();
    assert_eq!(broken, Break::Unsigned { first: 8, last: 9 });
    assert!(broken.to_string().contains("no signature"), "{broken}");
}

#[test]
fn a_signature_replayed_onto_a_forged_record_fails() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let conn = raw(dir.path());
    let genuine = signature(&conn, 7);
    append_forged(&conn, 8, &genuine);
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadSignature { first: 8, last: 8 })
    );
}

#[test]
fn a_signed_record_replayed_at_the_end_is_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    // Record 2 (signed, ending the first commit) copied whole after 7.
    raw(dir.path())
        .execute(
            "INSERT INTO audit (seq, at_ms, kind, body, prev, hash, key_id, signature) \
             SELECT 8, at_ms, kind, body, prev, hash, key_id, signature FROM audit WHERE seq = 2",
            [],
        )
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Reordered { seq: 8, belongs: 2 })
    );
}

#[test]
fn a_tail_cut_inside_a_commit_is_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    // Cut after record 5: the signature on 6 that covered 3 to 5 is gone.
    raw(dir.path())
        .execute("DELETE FROM audit WHERE seq >= 6", [])
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Unsigned { first: 3, last: 5 })
    );
}

#[test]
fn a_stripped_signature_at_the_end_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    raw(dir.path())
        .execute("UPDATE audit SET signature = '' WHERE seq = 7", [])
        .unwrap();
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::Unsigned { first: 7, last: 7 })
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
fn another_key_fails_the_first_signature() {
    let dir = tempfile::tempdir().unwrap();
    let store = commits(dir.path());
    let other = SecretKey::generate().unwrap().public();
    assert_eq!(
        store.verify(&other).unwrap(),
        Err(Break::BadSignature { first: 1, last: 2 })
    );
}

/// The one thing the chain cannot show by itself: a cut at a signed
/// record leaves a shorter valid chain. The head printed by an earlier
/// verify, kept elsewhere, is then no longer in it.
#[test]
fn a_tail_cut_at_a_signed_record_needs_the_anchored_head() {
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

/// Rows exactly as wardens before schema version 3 wrote them: every
/// record signed.
fn old_chain(dir: &Path, n: i64) {
    let db = dir.join("warden.db");
    drop(Store::open_at(&db, key(dir), 2).unwrap());
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
    assert_eq!(store.schema_version().unwrap(), 3);
    let verified = verify(dir.path(), &store).unwrap();
    assert_eq!((verified.records, verified.signatures), (4, 4));

    store
        .append_batch(&[outcome(5), outcome(6), outcome(7)])
        .unwrap();
    store.append(&outcome(8)).unwrap();
    let verified = verify(dir.path(), &store).unwrap();
    assert_eq!((verified.records, verified.signatures), (8, 6));

    // The old records keep their own protection.
    let conn = raw(dir.path());
    rewrite(&conn, 2, &body(22), &hash_of(&conn, 1));
    assert_eq!(
        verify(dir.path(), &store),
        Err(Break::BadSignature { first: 2, last: 2 })
    );
}
