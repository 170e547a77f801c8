use std::path::Path;

use warden_api::{ApprovalAnswer, ApprovalRequest, AuditEvent, OpenApproval};
use warden_policy::{Boundary, Capability, CapabilityGrant};
use warden_signing::SecretKey;

use crate::{SCHEMA_VERSION, SqliteStore, StoreError, host_key};

pub(crate) fn key(dir: &Path) -> SecretKey {
    host_key(&dir.join("host.key")).unwrap()
}

pub(crate) fn open(dir: &Path) -> SqliteStore {
    SqliteStore::open(&dir.join("warden.db"), key(dir)).unwrap()
}

pub(crate) fn raw(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("warden.db")).unwrap()
}

pub(crate) fn outcome(n: u64) -> AuditEvent {
    AuditEvent::Outcome {
        principal: None,
        agent: "a".into(),
        session: "s".into(),
        request_id: format!("r{n}"),
        tool: "fs_read".into(),
        ok: true,
        duration_us: n,
        limit_hit: false,
        error_type: None,
        domain_code: None,
    }
}

fn request(id: &str) -> ApprovalRequest {
    ApprovalRequest {
        id: id.into(),
        agent: "a".into(),
        request_id: "r1".into(),
        tool: "fs_write".into(),
        call: "fs_write(/x)".into(),
        reason: "side effect".into(),
        suggested_rule: "fs_write(/x)".into(),
        args_fingerprint: "f".into(),
        arguments: serde_json::Value::Null,
        always_offered: true,
    }
}

fn grant(agent: &str, to: u64) -> CapabilityGrant {
    CapabilityGrant {
        id: String::new(),
        agent: agent.into(),
        session: None,
        capability: Capability::Tool("fs_write".into()),
        boundary: Boundary::default(),
        goal: "fix the build".into(),
        issuer: "operator".into(),
        valid_from_ms: 0,
        valid_to_ms: to,
    }
}

#[test]
fn the_host_key_is_created_once_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.key");
    let first = host_key(&path).unwrap();
    let second = host_key(&path).unwrap();
    assert_eq!(first.public(), second.public());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn state_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store
            .add_rule("a", "fs_write(/x/**)", Some("ap-1"), None)
            .unwrap();
        store
            .add_rule("a", "fs_write(/x/**)", Some("ap-1"), None)
            .unwrap();
        store
            .asked(&OpenApproval {
                request: request("ap-1"),
                key: "k1".into(),
                asked_ms: 5,
                answer: None,
            })
            .unwrap();
        store
            .asked(&OpenApproval {
                request: request("ap-2"),
                key: "k2".into(),
                asked_ms: 6,
                answer: None,
            })
            .unwrap();
        store
            .answered(&request("ap-2"), &ApprovalAnswer::AllowOnce, "admin", 7)
            .unwrap();
        store.issue_grant(grant("a", u64::MAX / 2), None).unwrap();
    }
    let store = open(dir.path());
    let rules = store.rules().unwrap();
    assert_eq!(rules.len(), 1, "a rule is stored once");
    assert_eq!(rules[0].rule, "fs_write(/x/**)");
    let open = store.open_approvals().unwrap();
    assert_eq!(open.len(), 2);
    assert_eq!(open[0].answer, None);
    assert_eq!(open[1].answer, Some((ApprovalAnswer::AllowOnce, 7)));
    // Answering twice is refused; a used answer is gone.
    assert!(
        store
            .answered(&request("ap-2"), &ApprovalAnswer::AllowOnce, "admin", 8)
            .is_err()
    );
    store.close("ap-2", "consumed", 9).unwrap();
    assert_eq!(store.open_approvals().unwrap().len(), 1);
    assert_eq!(store.live_grants(1).unwrap().len(), 1);
    let verified = store
        .verify_with_host_key(&key(dir.path()))
        .unwrap()
        .unwrap();
    assert_eq!(verified.records, 3, "rule, answer and grant are audited");
}

#[test]
fn grants_expire_and_are_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let short = store.issue_grant(grant("a", 1_000), None).unwrap();
    let long = store.issue_grant(grant("a", 10_000), None).unwrap();
    assert_eq!((short.id.as_str(), long.id.as_str()), ("g-1", "g-2"));
    assert_eq!(store.live_grants(999).unwrap().len(), 2);
    assert_eq!(store.live_grants(1_000).unwrap(), vec![long.clone()]);
    store.revoke_grant("g-2", &operator()).unwrap();
    assert!(store.live_grants(0).unwrap().iter().all(|g| g.id != "g-2"));
    assert!(matches!(
        store.revoke_grant("g-2", &operator()),
        Err(StoreError::NoSuchGrant(_))
    ));
    assert_eq!(store.all_grants().unwrap().len(), 2);
}

#[test]
fn a_newer_schema_stops_the_host_and_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    raw(dir.path())
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let before = std::fs::read(dir.path().join("warden.db")).unwrap();
    let err = SqliteStore::open(&dir.path().join("warden.db"), key(dir.path())).unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1));
    assert!(err.to_string().contains("newer than this warden knows"));
    assert_eq!(std::fs::read(dir.path().join("warden.db")).unwrap(), before);
}

#[test]
fn a_corrupt_or_foreign_file_stops_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("warden.db");
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    let err = SqliteStore::open(&db, key(dir.path())).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");

    std::fs::remove_file(&db).unwrap();
    raw(dir.path())
        .execute_batch("CREATE TABLE other (x INTEGER)")
        .unwrap();
    let err = SqliteStore::open(&db, key(dir.path())).unwrap_err();
    assert!(
        err.to_string().contains("no Warden schema version"),
        "{err}"
    );

    // A real database whose pages were damaged.
    std::fs::remove_file(&db).unwrap();
    {
        let store = open(dir.path());
        for n in 0..300 {
            store.append(&outcome(n)).unwrap();
        }
    }
    {
        let conn = raw(dir.path());
        conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    let mut bytes = std::fs::read(&db).unwrap();
    let len = bytes.len();
    for b in &mut bytes[4096..len.min(4096 * 6)] {
        *b = 0xff;
    }
    std::fs::write(&db, bytes).unwrap();
    let err = SqliteStore::open(&db, key(dir.path())).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
}

#[test]
fn an_older_schema_is_migrated_keeping_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("warden.db");
    {
        let v1 = SqliteStore::open_at(&db, key(dir.path()), 1).unwrap();
        assert_eq!(v1.schema_version().unwrap(), 1);
        v1.add_rule("a", "git_status", None, None).unwrap();
        v1.append(&outcome(1)).unwrap();
        // Version 1 had no grants table.
        assert!(v1.live_grants(0).is_err());
    }
    let store = SqliteStore::open(&db, key(dir.path())).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.rules().unwrap()[0].rule, "git_status");
    store.issue_grant(grant("a", 10), None).unwrap();
    let verified = store
        .verify_with_host_key(&key(dir.path()))
        .unwrap()
        .unwrap();
    assert_eq!(verified.records, 3);
}

#[test]
fn trust_changes_audited_before_version_10_become_the_trust_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("warden.db");
    let change = warden_api::AuditEvent::Trust {
        agent: "a".into(),
        from: "standard".into(),
        to: "elevated (awaiting a person)".into(),
        reason: "score 0.90 reached 0.80".into(),
        by: None,
    };
    {
        let v9 = SqliteStore::open_at(&db, key(dir.path()), 9).unwrap();
        v9.append(&outcome(1)).unwrap();
        v9.append(&change).unwrap();
    }
    let store = SqliteStore::open(&db, key(dir.path())).unwrap();
    let history = store.trust_changes(10).unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0].agent, "a");
    assert_eq!(history[0].event["to"], "elevated (awaiting a person)");
    assert!(
        store
            .verify_with_host_key(&key(dir.path()))
            .unwrap()
            .is_ok()
    );
}

fn operator() -> warden_api::Attribution {
    warden_api::Attribution {
        actor: "operator".into(),
        confirm: true,
        reason: Some("test".into()),
    }
}

#[cfg(unix)]
#[test]
fn state_files_are_owner_only_also_when_they_existed_wider() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let wide =
        |p: &Path| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");

    // Made from scratch: owner-only, the WAL and shared-memory files too.
    crate::private_dir(&state).unwrap();
    assert_eq!(mode(&state), 0o700);
    let store = open(&state);
    store.append(&outcome(1)).unwrap();
    for file in ["warden.db", "warden.db-wal", "warden.db-shm", "host.key"] {
        assert_eq!(mode(&state.join(file)), 0o600, "{file}");
    }
    drop(store);

    // Left wide open (a restore, an older warden, umask 000): narrowed at
    // the next open.
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    for file in ["warden.db", "warden.db-wal", "warden.db-shm", "host.key"] {
        let path = state.join(file);
        if !path.exists() {
            std::fs::write(&path, b"").unwrap();
        }
        wide(&path);
    }
    crate::private_dir(&state).unwrap();
    let store = open(&state);
    assert_eq!(mode(&state), 0o700);
    for file in ["warden.db", "warden.db-wal", "warden.db-shm", "host.key"] {
        assert_eq!(mode(&state.join(file)), 0o600, "{file}");
    }
    drop(store);
}

#[test]
fn a_checkpoint_leaves_nothing_for_the_next_open_to_replay() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("warden.db-wal");
    {
        let store = open(dir.path());
        for n in 0..200 {
            store.append(&outcome(n)).unwrap();
        }
        assert!(
            std::fs::metadata(&wal).unwrap().len() > 0,
            "appends go to the write-ahead log first"
        );
        // Another connection (a CLI reading the log) does not stop it.
        let reader = raw(dir.path());
        let counted: i64 = reader
            .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
            .unwrap();
        assert_eq!(counted, 200);
        crate::Store::checkpoint(&store).unwrap();
        assert_eq!(
            std::fs::metadata(&wal).map_or(0, |m| m.len()),
            0,
            "everything committed moved into the database file"
        );
        // The store keeps working after it.
        store.append(&outcome(200)).unwrap();
    }
    let store = open(dir.path());
    let verified = store
        .verify_with_host_key(&key(dir.path()))
        .unwrap()
        .unwrap();
    assert_eq!(verified.records, 201);
}

/// A run's first write starts the write-ahead log (file, header and
/// directory synced); `warm_up` does that ahead of the first call and
/// changes nothing else.
#[test]
fn warming_up_starts_the_log_and_changes_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("warden.db-wal");
    let log_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    {
        let store = open(dir.path());
        store.append(&outcome(1)).unwrap();
    }
    // Closing checkpointed the log away: the next run starts a new one.
    assert_eq!(log_len(), 0);
    let store = open(dir.path());
    assert_eq!(log_len(), 0);
    crate::Store::warm_up(&store).unwrap();
    assert!(log_len() > 0, "warming up wrote nothing to the log");
    let version: u32 = raw(dir.path())
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    store.append(&outcome(2)).unwrap();
    let verified = store
        .verify_with_host_key(&key(dir.path()))
        .unwrap()
        .unwrap();
    assert_eq!(verified.records, 2);
}
