//! The store conformance suite: every behaviour of the `Store` interface,
//! run against each backend: the embedded SQLite file and a real
//! PostgreSQL server (a private loopback cluster started by
//! `scripts/ensure-postgres`, a new database per test). A backend that
//! passes is one the host can run on.
//!
//! After the shared suite: what only PostgreSQL needs checked (a database
//! that is not Warden's, a newer schema, a server that does not answer,
//! a record edited in place).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use warden_api::{ApprovalAnswer, ApprovalRequest, Attribution, AuditEvent, OpenApproval};
use warden_policy::{Boundary, Capability, CapabilityGrant};
use warden_signing::SecretKey;
use warden_store::{
    BlueprintMove, Closed, DefinitionPin, GapCounts, GapRule, NewBlueprint, NewGap,
    PG_SCHEMA_VERSION, PgStore, PluginFiles, SharedPlugin, SqliteStore, Store, StoreError,
    host_key, now_ms,
};

#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

/// Where one test's state lives: a directory for keys (and the SQLite
/// file), and for PostgreSQL a database of its own.
struct Place {
    backend: Backend,
    dir: tempfile::TempDir,
    url: Option<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A new empty database in the test cluster.
pub fn new_postgres_database() -> String {
    let out = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/ensure-postgres"))
        .arg("--database")
        .output()
        .expect("running scripts/ensure-postgres");
    assert!(
        out.status.success(),
        "scripts/ensure-postgres failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

impl Place {
    fn new(backend: Backend) -> Place {
        let url = matches!(backend, Backend::Postgres).then(new_postgres_database);
        Place {
            backend,
            dir: tempfile::tempdir().unwrap(),
            url,
        }
    }

    /// The host key named `name` (made on first use).
    fn key(&self, name: &str) -> SecretKey {
        host_key(&self.dir.path().join(format!("{name}.key"))).unwrap()
    }

    fn try_open(&self, key: &str) -> Result<Arc<dyn Store>, StoreError> {
        let key = self.key(key);
        Ok(match self.backend {
            Backend::Sqlite => {
                Arc::new(SqliteStore::open(&self.dir.path().join("warden.db"), key)?)
            }
            Backend::Postgres => Arc::new(PgStore::open(self.url.as_deref().unwrap(), key)?),
        })
    }

    /// A store of host `key` on this place's state.
    fn open(&self, key: &str) -> Arc<dyn Store> {
        self.try_open(key).unwrap()
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

fn asked(id: &str, at: u64) -> OpenApproval {
    OpenApproval {
        request: request(id),
        key: format!("key-{id}"),
        asked_ms: at,
        answer: None,
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

fn operator() -> Attribution {
    Attribution {
        actor: "alice".into(),
        confirm: true,
        reason: None,
    }
}

fn outcome(n: u64) -> AuditEvent {
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

/// The kinds of the audit records, oldest first.
fn kinds(store: &dyn Store) -> Vec<String> {
    store
        .records_after(0, 1_000)
        .unwrap()
        .into_iter()
        .map(|r| r.kind)
        .collect()
}

fn rules_are_kept_once_in_order_and_audited(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    store
        .add_rule("a", "fs_write(/x/**)", Some("ap-1"), None)
        .unwrap();
    store
        .add_rule("a", "fs_write(/x/**)", Some("ap-1"), None)
        .unwrap();
    store
        .add_rule("b", "fs_read", None, Some(&operator()))
        .unwrap();
    let rules = store.rules().unwrap();
    let seen: Vec<_> = rules
        .iter()
        .map(|r| (r.agent.as_str(), r.rule.as_str()))
        .collect();
    assert_eq!(seen, [("a", "fs_write(/x/**)"), ("b", "fs_read")]);
    assert_eq!(rules[0].approval.as_deref(), Some("ap-1"));
    assert_eq!(kinds(store.as_ref()), ["rule-added", "rule-added"]);
}

fn approvals_are_answered_once_and_used_once(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    assert_eq!(store.approval_asked(&asked("", 5)).unwrap(), "ap-1");
    assert_eq!(
        store.approval_asked(&asked("ap-1", 6)).unwrap(),
        "ap-2",
        "the store gives the id, whatever the asker had"
    );
    store
        .approval_answered(&request("ap-2"), &ApprovalAnswer::AllowOnce, "admin", 8)
        .unwrap();
    let open = store.open_approvals().unwrap();
    assert_eq!(open.len(), 2);
    assert_eq!(open[0].request.id, "ap-1");
    assert_eq!(open[0].answer, None);
    assert_eq!(open[1].key, "key-ap-1", "the key is the asker's");
    assert_eq!(open[1].answer, Some((ApprovalAnswer::AllowOnce, 8)));
    assert!(matches!(
        store.approval_answered(&request("ap-2"), &ApprovalAnswer::Deny { reason: "no".into() }, "admin", 9),
        Err(StoreError::NotPending(id)) if id == "ap-2"
    ));
    // Found by id and by the call's key while open.
    let found = store.open_approval("ap-2").unwrap().unwrap();
    assert_eq!(found.answer, Some((ApprovalAnswer::AllowOnce, 8)));
    let by_key = store.open_approval_by_key("key-ap-1").unwrap().unwrap();
    assert_eq!(by_key.request.id, "ap-2");
    assert!(store.open_approval("ap-9").unwrap().is_none());
    // Closing a pending approval changes nothing; closing an answered one
    // takes it off the book for good, and only the first close counts.
    assert!(!store.approval_closed("ap-1", Closed::Consumed, 10).unwrap());
    assert!(store.approval_closed("ap-2", Closed::Consumed, 10).unwrap());
    assert!(!store.approval_closed("ap-2", Closed::Consumed, 11).unwrap());
    assert!(!store.approval_closed("ap-2", Closed::Dropped, 11).unwrap());
    assert!(store.open_approval("ap-2").unwrap().is_none());
    let open = store.open_approvals().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].request.id, "ap-1");
    assert_eq!(
        kinds(store.as_ref()),
        ["approval"],
        "only the answer is audited"
    );
}

fn grants_get_new_ids_expire_and_are_revoked_once(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let version = store.grants_version().unwrap();
    let short = store.issue_grant(grant("a", 1_000), None).unwrap();
    let long = store
        .issue_grant(grant("a", 10_000), Some(&operator()))
        .unwrap();
    assert!(short.id.starts_with("g-") && long.id.starts_with("g-"));
    assert_ne!(short.id, long.id);
    assert_ne!(
        store.grants_version().unwrap(),
        version,
        "an issue moves the version"
    );
    assert_eq!(
        store.live_grants(999).unwrap(),
        vec![short.clone(), long.clone()]
    );
    assert_eq!(store.live_grants(1_000).unwrap(), vec![long.clone()]);
    let before = store.grants_version().unwrap();
    let revoked = store.revoke_grant(&long.id, &operator()).unwrap();
    assert_eq!(revoked, long);
    assert_ne!(
        store.grants_version().unwrap(),
        before,
        "a revocation moves the version"
    );
    assert!(
        store
            .live_grants(0)
            .unwrap()
            .iter()
            .all(|g| g.id != long.id)
    );
    assert!(matches!(
        store.revoke_grant(&long.id, &operator()),
        Err(StoreError::NoSuchGrant(_))
    ));
    assert!(matches!(
        store.revoke_grant("g-404", &operator()),
        Err(StoreError::NoSuchGrant(_))
    ));
    let all = store.all_grants().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].1, None);
    assert!(all[1].1.is_some(), "a revoked grant says when");
    assert_eq!(kinds(store.as_ref()), ["grant", "grant", "grant"]);
}

fn trust_is_replaced_and_its_changes_audited(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    assert!(store.trust("a").unwrap().is_none());
    assert!(
        store
            .put_trust("a", None, &serde_json::json!({"level": 1}), &[])
            .unwrap()
    );
    let change = AuditEvent::Trust {
        agent: "a".into(),
        from: "standard".into(),
        to: "elevated".into(),
        reason: "promoted".into(),
        by: None,
    };
    // Written from a state that is no longer stored: refused, nothing
    // audited.
    for stale in [None, Some(serde_json::json!({"level": 0}))] {
        assert!(
            !store
                .put_trust(
                    "a",
                    stale.as_ref(),
                    &serde_json::json!({"level": 9}),
                    std::slice::from_ref(&change),
                )
                .unwrap()
        );
    }
    assert!(store.trust_changes(10).unwrap().is_empty());
    store
        .put_trust(
            "a",
            Some(&serde_json::json!({"level": 1})),
            &serde_json::json!({"level": 2}),
            std::slice::from_ref(&change),
        )
        .unwrap();
    let stored = store.trust("a").unwrap().unwrap();
    assert_eq!(stored.state, serde_json::json!({"level": 2}));
    assert!(store.trust("b").unwrap().is_none());
    assert_eq!(kinds(store.as_ref()), ["trust"]);
}

/// Hosts (or replicas) that count an agent's outcomes at once, each
/// reading the state, changing it and writing it from what it read, lose
/// no count: a write from a state that moved meanwhile is refused, and
/// the writer starts again from what is stored.
fn concurrent_trust_writers_lose_no_update(backend: Backend) {
    let place = Place::new(backend);
    let stores = [place.open("host"), place.open("host")];
    assert_eq!(
        stores[0].shared(),
        matches!(backend, Backend::Postgres),
        "a database other hosts share says so"
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = stores[t % 2].clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    loop {
                        let prior = store.trust("a").unwrap().map(|t| t.state);
                        let n = prior.as_ref().map_or(0, |p| p["n"].as_u64().unwrap());
                        if store
                            .put_trust("a", prior.as_ref(), &json!({"n": n + 1}), &[])
                            .unwrap()
                        {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        stores[0].trust("a").unwrap().unwrap().state,
        json!({"n": 100})
    );
}

/// The deployment's plugins: an install with its files, seen by every
/// store of the database; a change older than the one stored changes
/// nothing (a replica publishing what it holds never undoes a later
/// install or removal); a removal leaves a tombstone without files.
fn shared_plugins_keep_the_newest_change_of_each_name(backend: Backend) {
    let place = Place::new(backend);
    let a = place.open("host");
    let plugin = |digest: Option<&str>, at_ms: u64| SharedPlugin {
        name: "fs".into(),
        digest: digest.map(str::to_owned),
        record: digest.map_or(serde_json::Value::Null, |d| json!({"digest": d})),
        at_ms,
    };
    let files = |n: u8| PluginFiles {
        component: vec![0, n, 0xff],
        signature: (n % 2 == 1).then(|| format!("signature {n}")),
    };
    assert!(a.shared_plugins().unwrap().is_empty());
    assert!(
        a.put_shared_plugin(&plugin(Some("sha256:1"), 100), Some(&files(1)))
            .unwrap()
    );
    let b = place.open("host");
    assert_eq!(
        b.shared_plugins().unwrap(),
        vec![plugin(Some("sha256:1"), 100)]
    );
    assert_eq!(b.plugin_files("fs", "sha256:1").unwrap(), Some(files(1)));
    assert_eq!(b.plugin_files("fs", "sha256:2").unwrap(), None);
    assert_eq!(b.plugin_files("other", "sha256:1").unwrap(), None);

    // Older than what is stored: nothing changes.
    assert!(
        !b.put_shared_plugin(&plugin(Some("sha256:0"), 99), Some(&files(0)))
            .unwrap()
    );
    assert!(!b.put_shared_plugin(&plugin(None, 50), None).unwrap());
    assert_eq!(
        a.shared_plugins().unwrap(),
        vec![plugin(Some("sha256:1"), 100)]
    );

    assert!(
        b.put_shared_plugin(&plugin(Some("sha256:2"), 200), Some(&files(2)))
            .unwrap()
    );
    assert_eq!(a.plugin_files("fs", "sha256:2").unwrap(), Some(files(2)));
    assert_eq!(a.plugin_files("fs", "sha256:1").unwrap(), None);
    assert!(a.put_shared_plugin(&plugin(None, 300), None).unwrap());
    assert_eq!(b.shared_plugins().unwrap(), vec![plugin(None, 300)]);
    assert_eq!(b.plugin_files("fs", "sha256:2").unwrap(), None);
}

fn concurrent_appends_make_one_verifiable_chain(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                (0..40)
                    .map(|i| store.append(&outcome(t * 100 + i)).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (1..=320).collect::<Vec<_>>(),
        "every record has its own place"
    );
    let key = place.key("host");
    let verified = store.verify_with_host_key(&key).unwrap().unwrap();
    assert_eq!(verified.records, 320);
    let tail = store.tail(3).unwrap();
    assert_eq!(
        tail.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [318, 319, 320]
    );
    assert_eq!(tail[2].hash, verified.head);
    assert_eq!(store.records_after(10, 5).unwrap()[0].seq, 11);
    // Sealed, the chain verifies with the public key alone.
    store.seal().unwrap();
    let verified = store.verify(&key.public()).unwrap().unwrap();
    assert_eq!((verified.records, verified.signed_through), (320, 320));
}

fn async_appends_are_durable_when_they_return(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let seqs = runtime.block_on(async {
        let calls = (0..50).map(|n| {
            let store = store.clone();
            async move { store.append_async(&outcome(n)).await.unwrap() }
        });
        futures_util::future::join_all(calls).await
    });
    assert_eq!(seqs.len(), 50);
    drop(store);
    let again = place.open("host");
    assert_eq!(
        again.tail(100).unwrap().len(),
        50,
        "all 50 survive reopening"
    );
    let verified = again
        .verify_with_host_key(&place.key("host"))
        .unwrap()
        .unwrap();
    assert_eq!(verified.records, 50);
}

fn records_queued_for_later_are_in_every_read_of_the_log(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    // A reader that asks right after a call answered sees the call's
    // outcome, though the outcome was only queued: the tail, a page of
    // records after a point, and the kinds of the whole log.
    store.append(&outcome(0)).unwrap();
    store.append(&outcome(1)).unwrap();
    store.append_later(&outcome(2)).unwrap();
    let tail = store.tail(2).unwrap();
    assert_eq!(
        tail.iter()
            .map(|r| r.event["request_id"].clone())
            .collect::<Vec<_>>(),
        ["r1", "r2"],
        "the tail ends with the queued record"
    );
    store.append_later(&outcome(3)).unwrap();
    let after = store.records_after(3, 10).unwrap();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].event["request_id"], "r3");
    store.append_later(&outcome(4)).unwrap();
    assert_eq!(kinds(&*store).len(), 5);
    // Verifying with the host key checks every record, queued ones too.
    store.append_later(&outcome(5)).unwrap();
    let verified = store
        .verify_with_host_key(&place.key("host"))
        .unwrap()
        .unwrap();
    assert_eq!(verified.records, 6);
}

fn state_survives_reopening_and_the_chain_goes_on(backend: Backend) {
    let place = Place::new(backend);
    {
        let store = place.open("host");
        store.add_rule("a", "fs_read", None, None).unwrap();
        store.issue_grant(grant("a", u64::MAX / 2), None).unwrap();
        for _ in 0..7 {
            store.approval_asked(&asked("", 1)).unwrap();
        }
        store.append(&outcome(1)).unwrap();
    }
    let store = place.open("host");
    assert_eq!(store.rules().unwrap().len(), 1);
    assert_eq!(store.live_grants(0).unwrap().len(), 1);
    assert_eq!(
        store.approval_asked(&asked("", 2)).unwrap(),
        "ap-8",
        "ids go on after a restart, never reused"
    );
    store.append(&outcome(2)).unwrap();
    let verified = store
        .verify_with_host_key(&place.key("host"))
        .unwrap()
        .unwrap();
    assert_eq!(
        verified.records, 4,
        "rule, grant and two outcomes on one chain"
    );
    assert!(store.schema_version().unwrap() >= 1);
}

fn a_change_by_another_store_moves_the_grants_version(backend: Backend) {
    // An operator revokes a grant through another process (or replica):
    // the very next decision here must not run on the revoked grant, so
    // the version has moved by the time the revocation returns, with no
    // waiting for an announcement to arrive.
    let place = Place::new(backend);
    let a = place.open("host");
    let b = place.open("host");
    for round in 0..20 {
        let before = a.grants_version().unwrap();
        let issued = b.issue_grant(grant("a", u64::MAX / 2), None).unwrap();
        let issued_seen = a.grants_version().unwrap();
        assert_ne!(issued_seen, before, "round {round}: the issue was not seen");
        assert_eq!(a.live_grants(0).unwrap(), vec![issued.clone()]);
        b.revoke_grant(&issued.id, &operator()).unwrap();
        assert_ne!(
            a.grants_version().unwrap(),
            issued_seen,
            "round {round}: the revocation was not seen"
        );
        assert_eq!(a.live_grants(0).unwrap(), vec![]);
    }
}

fn trust_changes_are_kept_beside_the_chain_newest_first(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let change = |agent: &str, n: u64| AuditEvent::Trust {
        agent: agent.into(),
        from: format!("level-{n}"),
        to: format!("level-{}", n + 1),
        reason: format!("change {n}"),
        by: None,
    };
    for n in 0..3 {
        store.append(&outcome(n)).unwrap();
        let prior = (n > 0).then(|| json!({"n": n - 1}));
        assert!(
            store
                .put_trust(
                    "a",
                    prior.as_ref(),
                    &json!({"n": n}),
                    &[change("a", n), outcome(n)]
                )
                .unwrap()
        );
    }
    // A state written without a change adds no history.
    store.put_trust("b", None, &json!({}), &[]).unwrap();
    let seen = |changes: Vec<warden_store::StoredTrustChange>| -> Vec<(String, String)> {
        changes
            .iter()
            .map(|c| {
                assert!(c.at_ms > 0);
                (
                    c.agent.clone(),
                    c.event["reason"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(
        seen(store.trust_changes(2).unwrap()),
        [
            ("a".into(), "change 2".into()),
            ("a".into(), "change 1".into())
        ]
    );
    assert_eq!(store.trust_changes(10).unwrap().len(), 3);
    // Each change is on the audit chain too, and the chain verifies.
    assert_eq!(
        kinds(store.as_ref())
            .iter()
            .filter(|k| k.as_str() == "trust")
            .count(),
        3
    );
    assert!(
        store
            .verify_with_host_key(&place.key("host"))
            .unwrap()
            .is_ok()
    );
    // A shared database: another host's changes are found too.
    if matches!(backend, Backend::Postgres) {
        place
            .open("other")
            .put_trust("c", None, &json!({}), &[change("c", 7)])
            .unwrap();
        assert_eq!(
            seen(store.trust_changes(1).unwrap()),
            [("c".into(), "change 7".into())]
        );
    }
}

fn stores_of_one_key_share_its_chain(backend: Backend) {
    let place = Place::new(backend);
    let a = place.open("host");
    let b = place.open("host");
    for n in 0..20 {
        let store = if n % 2 == 0 { &a } else { &b };
        store.append(&outcome(n)).unwrap();
    }
    let verified = a.verify_with_host_key(&place.key("host")).unwrap().unwrap();
    assert_eq!(verified.records, 20);
}

fn an_answer_never_lands_twice_under_a_race(backend: Backend) {
    let place = Place::new(backend);
    let a = place.open("host");
    let b = place.open("host");
    assert_eq!(a.approval_asked(&asked("", 1)).unwrap(), "ap-1");
    let answers: Vec<_> = [a, b]
        .into_iter()
        .map(|store| {
            std::thread::spawn(move || {
                store.approval_answered(&request("ap-1"), &ApprovalAnswer::AllowOnce, "admin", 2)
            })
        })
        .collect();
    let ok = answers
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(Result::is_ok)
        .count();
    assert_eq!(ok, 1, "exactly one of two racing answers is recorded");
}

/// Hosts sharing a database ask at the same time: each ask gets an id of
/// its own, whatever id the asker had in mind.
fn asks_racing_from_two_stores_get_ids_of_their_own(backend: Backend) {
    let place = Place::new(backend);
    let a = place.open("host");
    let b = place.open("host");
    let asks: Vec<_> = [a.clone(), b]
        .into_iter()
        .enumerate()
        .map(|(t, store)| {
            std::thread::spawn(move || {
                (0..20)
                    .map(|i| {
                        store
                            .approval_asked(&asked("ap-1", t as u64 * 100 + i))
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<String> = asks.into_iter().flat_map(|t| t.join().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 40, "40 asks, 40 ids: {ids:?}");
    assert!(ids.iter().all(|id| id.starts_with("ap-")));
    let open = a.open_approvals().unwrap();
    assert_eq!(open.len(), 40);
    assert!(
        open.iter().all(|o| ids.contains(&o.request.id)),
        "each stored request carries the id it was given"
    );
}

fn pin(tool: &str, digest: &str) -> DefinitionPin {
    DefinitionPin {
        server: "gh".into(),
        tool: tool.into(),
        digest: digest.into(),
        definition: serde_json::json!({"name": tool, "description": digest}),
        approved_ms: 0,
        by: None,
    }
}

/// Definition pins: an operator's approval of a server's tool
/// definitions, replaced per tool, revoked per tool or per server, and
/// audited each time.
fn definition_pins_are_replaced_revoked_and_audited(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    assert!(store.definition_pins(Some("gh")).unwrap().is_empty());
    store
        .pin_definitions(
            &[pin("create_issue", "sha256:aa"), pin("search", "sha256:bb")],
            &operator(),
        )
        .unwrap();
    store
        .pin_definitions(
            &[DefinitionPin {
                server: "fs2".into(),
                ..pin("read", "sha256:cc")
            }],
            &operator(),
        )
        .unwrap();
    // Approved again after a change: the new digest replaces the old.
    store
        .pin_definitions(&[pin("search", "sha256:dd")], &operator())
        .unwrap();
    let pins = store.definition_pins(Some("gh")).unwrap();
    let seen: Vec<_> = pins
        .iter()
        .map(|p| (p.tool.as_str(), p.digest.as_str()))
        .collect();
    assert_eq!(
        seen,
        [("create_issue", "sha256:aa"), ("search", "sha256:dd")]
    );
    assert_eq!(pins[1].definition["description"], "sha256:dd");
    // What a call checks: the one pin, by server and tool.
    assert_eq!(
        store.pinned_digest("gh", "search").unwrap().as_deref(),
        Some("sha256:dd")
    );
    assert_eq!(
        store.pinned_digest("fs2", "read").unwrap().as_deref(),
        Some("sha256:cc")
    );
    assert_eq!(store.pinned_digest("gh", "read").unwrap(), None);
    assert_eq!(store.pinned_digest("fs2", "search").unwrap(), None);
    assert_eq!(pins[1].by.as_ref().unwrap().actor, "alice");
    assert!(pins[1].approved_ms > 0, "the store stamps the approval");
    assert_eq!(store.definition_pins(None).unwrap().len(), 3);
    assert_eq!(
        store
            .unpin_definitions("gh", &["search".into()], &operator())
            .unwrap(),
        1
    );
    assert_eq!(
        store.unpin_definitions("gh", &[], &operator()).unwrap(),
        1,
        "the rest"
    );
    assert!(store.definition_pins(Some("gh")).unwrap().is_empty());
    assert_eq!(store.pinned_digest("gh", "create_issue").unwrap(), None);
    assert_eq!(store.definition_pins(None).unwrap().len(), 1);
    assert_eq!(
        kinds(store.as_ref()),
        [
            "definitions-pinned",
            "definitions-pinned",
            "definitions-pinned",
            "definitions-unpinned",
            "definitions-unpinned"
        ]
    );
    let audited = store.records_after(0, 1).unwrap();
    assert_eq!(
        audited[0].event["tools"][0]["digest"], "sha256:aa",
        "{}",
        audited[0].event
    );
}

/// MCP sessions: what a store kept, another store on the same state
/// (another replica, or the host after a restart) hands out; replaced,
/// dropped, and never once expired; an expired one is cleared by the next
/// store. Ids come from a client's header, so any text is an id.
fn sessions_are_shared_until_dropped_or_expired(backend: Backend) {
    let place = Place::new(backend);
    let (a, b) = (place.open("a"), place.open("b"));
    let later = now_ms() + 60_000;
    let init =
        json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "c", "version": "1"}});
    assert_eq!(a.session("s-1").unwrap(), None);
    a.put_session("s-1", &init, later).unwrap();
    assert_eq!(b.session("s-1").unwrap().as_ref(), Some(&init));
    let odd = "s\u{0}'; DROP TABLE sessions; --\u{202e}";
    b.put_session(odd, &json!({"n": 2}), later).unwrap();
    assert_eq!(a.session(odd).unwrap(), Some(json!({"n": 2})));
    b.put_session("s-1", &json!({"n": 3}), later).unwrap();
    assert_eq!(a.session("s-1").unwrap(), Some(json!({"n": 3})));
    a.drop_session("s-1").unwrap();
    assert_eq!(b.session("s-1").unwrap(), None);
    a.drop_session("never-kept").unwrap();

    // Expired: never handed out, and gone once another session is kept.
    a.put_session("old", &init, now_ms() - 1).unwrap();
    assert_eq!(b.session("old").unwrap(), None);
    b.put_session("new", &init, later).unwrap();
    a.put_session("old", &init, later).unwrap();
    assert_eq!(
        b.session("old").unwrap().as_ref(),
        Some(&init),
        "kept again"
    );
    drop((a, b));
    let reopened = place.open("a");
    assert_eq!(reopened.session("new").unwrap().as_ref(), Some(&init));
    assert_eq!(reopened.session(odd).unwrap(), Some(json!({"n": 2})));
    // Nothing about sessions is audited: they are no decision.
    assert!(kinds(reopened.as_ref()).is_empty());
}

/// A small ring and a short window: three requests from two sessions
/// within a second recur.
const GAP_RULE: GapRule = GapRule {
    capacity: 10,
    threshold: 3,
    window_ms: 1_000,
    min_sessions: 2,
};

fn gap(signature: &str, session: &str, at_ms: u64) -> NewGap {
    NewGap {
        signature: signature.into(),
        agent: "alice".into(),
        session: session.into(),
        asked: format!("{}\u{0}x", signature.replace(':', "_")),
        at_ms,
    }
}

/// The gap log: a signature is recurring at the threshold within the
/// window from enough distinct sessions (one session repeating itself
/// counts once), announced and audited once per window; the ring keeps
/// its capacity, the oldest going first.
fn gaps_recur_by_threshold_window_and_sessions(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let (rule, at) = (GAP_RULE, 1_000_000);
    // Two hits: no gap yet.
    assert!(
        !store
            .record_gap(&gap("weather:forecast", "s1", at), &rule)
            .unwrap()
            .recurring
    );
    assert!(
        !store
            .record_gap(&gap("weather:forecast", "s2", at + 1), &rule)
            .unwrap()
            .recurring
    );
    // The third within the window, from two sessions: recurring, once.
    let third = store
        .record_gap(&gap("weather:forecast", "s1", at + 2), &rule)
        .unwrap();
    assert!(third.recurring && third.became_recurring, "{third:?}");
    assert_eq!(
        third.counts,
        Some(GapCounts {
            occurrences: 3,
            sessions: 2
        })
    );
    // Announced in this window: kept, and not counted again.
    let fourth = store
        .record_gap(&gap("weather:forecast", "s3", at + 3), &rule)
        .unwrap();
    assert!(
        fourth.recurring && !fourth.became_recurring && fourth.counts.is_none(),
        "announced once: {fourth:?}"
    );
    // Three from one session: never.
    for i in 0..3 {
        let t = store
            .record_gap(&gap("pdf:render", "s9", at + 10 + i), &rule)
            .unwrap();
        assert!(!t.recurring, "one session repeating itself: {t:?}");
    }
    // Three spread wider than the window: never.
    for (i, session) in ["a", "b", "c"].iter().enumerate() {
        let t = store
            .record_gap(&gap("mail:send", session, at + 600 * i as u64), &rule)
            .unwrap();
        assert!(!t.recurring, "{t:?}");
    }
    let listed = store.gaps(at + 1_300, &rule).unwrap();
    let names: Vec<_> = listed.iter().map(|g| g.signature.as_str()).collect();
    assert_eq!(names, ["mail:send"], "only the window's rows: {listed:?}");
    let listed = store.gaps(at + 20, &rule).unwrap();
    let weather = listed
        .iter()
        .find(|g| g.signature == "weather:forecast")
        .unwrap();
    assert!(weather.recurring);
    assert_eq!((weather.occurrences, weather.sessions), (4, 3));
    assert_eq!(weather.asked, ["weather_forecast\u{0}x"]);
    // The ring: ten rows at most, the oldest go first (the four weather
    // rows were the first in).
    let later = at + 1_250;
    for session in ["x", "y", "z", "w"] {
        store
            .record_gap(&gap("mail:send", session, later), &rule)
            .unwrap();
    }
    let kept = store
        .gaps(
            later,
            &GapRule {
                window_ms: u64::MAX / 2,
                ..rule
            },
        )
        .unwrap();
    let total: u64 = kept.iter().map(|g| g.occurrences).sum();
    assert_eq!(total, 10, "{kept:?}");
    assert!(
        kept.iter().all(|g| g.signature != "weather:forecast"),
        "{kept:?}"
    );
    // A new window announces again.
    for session in ["s1", "s2", "s3"] {
        store
            .record_gap(&gap("weather:forecast", session, at + 5_000), &rule)
            .unwrap();
    }
    let audited: Vec<_> = store
        .records_after(0, u64::MAX)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "gap-recurring")
        .map(|r| r.event)
        .collect();
    // weather:forecast, mail:send (its rows of the ring's last steps fell
    // within one window), and weather:forecast again in its new window.
    let signatures: Vec<_> = audited
        .iter()
        .map(|e| e["signature"].as_str().unwrap())
        .collect();
    assert_eq!(
        signatures,
        ["weather:forecast", "mail:send", "weather:forecast"]
    );
    assert_eq!(audited[0]["sessions"], 2);
}

/// Whether a signature is recurring is read one session at a time, not
/// from a count of the ring: one session filling the ring with a missing
/// tool never makes it recurring alone, a session whose rows are older
/// than the window does not count, and the request that makes it
/// recurring is audited with the window's full counts.
fn gaps_read_sessions_within_the_window(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let (rule, at) = (GAP_RULE, 1_000_000);
    // A session before the window, then one repeating itself past the
    // ring's size within it.
    store
        .record_gap(&gap("pdf:render", "old", at), &rule)
        .unwrap();
    for i in 0..12 {
        let t = store
            .record_gap(&gap("pdf:render", "loop", at + 2_000 + i), &rule)
            .unwrap();
        assert!(!t.recurring && t.counts.is_none(), "{t:?}");
    }
    // The ring holds its newest ten; a second session within the window.
    let t = store
        .record_gap(&gap("pdf:render", "other", at + 2_100), &rule)
        .unwrap();
    assert!(t.became_recurring, "{t:?}");
    assert_eq!(
        t.counts,
        Some(GapCounts {
            occurrences: 10,
            sessions: 2
        })
    );
    // Only "old" and one repeating session within a later window: short,
    // though "old" sorts first and asked again, out of the window.
    store
        .record_gap(&gap("mail:send", "b-loop", at + 5_000), &rule)
        .unwrap();
    store
        .record_gap(&gap("mail:send", "a-old", at + 5_001), &rule)
        .unwrap();
    for i in 0..3 {
        let t = store
            .record_gap(&gap("mail:send", "b-loop", at + 6_500 + i), &rule)
            .unwrap();
        assert!(!t.recurring, "{t:?}");
    }
    let t = store
        .record_gap(&gap("mail:send", "c-new", at + 6_600), &rule)
        .unwrap();
    assert!(t.became_recurring, "{t:?}");
    assert_eq!(
        t.counts,
        Some(GapCounts {
            occurrences: 4,
            sessions: 2
        })
    );
    let audited: Vec<_> = store
        .records_after(0, u64::MAX)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "gap-recurring")
        .map(|r| (r.event["signature"].clone(), r.event["occurrences"].clone()))
        .collect();
    assert_eq!(
        audited,
        [
            (json!("pdf:render"), json!(10)),
            (json!("mail:send"), json!(4))
        ]
    );
}

/// A rule suggested from a call's arguments, and an approval's binding
/// key (NUL-separated), hold whatever text the call carried.
fn any_text_a_call_carries_is_kept(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let rule = "fs_write(/tmp/a\u{0}b\u{1b}[31m\u{202e}é)";
    store.add_rule("a", rule, None, None).unwrap();
    let mut approval = asked("", 1);
    approval.key = "a\u{0}fs_write\u{0}fs_write(/x\u{0})\u{0}f".into();
    store.approval_asked(&approval).unwrap();
    assert_eq!(store.rules().unwrap()[0].rule, rule);
    assert_eq!(store.open_approvals().unwrap()[0].key, approval.key);
}

fn blueprint(name: &str) -> NewBlueprint {
    NewBlueprint {
        name: name.into(),
        capability: "words:count".into(),
        author: "agent:a".into(),
        blueprint: "{\"capability\":\"words:count\"}".into(),
        blueprint_sha256: "sha256:bp".into(),
        derived: "{}".into(),
        at_ms: 1_000,
        expires_ms: 9_000,
    }
}

fn step(id: u64, from: &str, to: &str) -> BlueprintMove {
    BlueprintMove {
        id,
        from: from.into(),
        to: to.into(),
        actor: "operator:ops".into(),
        reason: Some("looked at it".into()),
        approval: None,
        keep_approval: false,
        builder_sha256: Some("sha256:builder".into()),
        grants_sha256: Some("sha256:grants".into()),
        artifact: None,
        at_ms: 2_000,
    }
}

/// Blueprints are kept as proposed; each move starts from the state it
/// names (a second answer to the same question fails), keeps or clears
/// the approval's binding, and is audited with the digests.
fn blueprints_move_only_from_where_they_stand(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let first = store.add_blueprint(&blueprint("gen_words_count")).unwrap();
    let second = store.add_blueprint(&blueprint("gen_words_count")).unwrap();
    assert_ne!(first.id, second.id);
    assert_eq!(first.state, "pending");
    assert_eq!(first.expires_ms, 9_000);
    let approved = store
        .move_blueprint(&BlueprintMove {
            approval: Some("{\"binding\":1}".into()),
            ..step(first.id, "pending", "approved")
        })
        .unwrap();
    assert_eq!(approved.state, "approved");
    assert_eq!(approved.approval.as_deref(), Some("{\"binding\":1}"));
    // An expiry racing the approval finds it moved.
    let late = store
        .move_blueprint(&step(first.id, "pending", "rejected"))
        .unwrap_err();
    assert!(
        matches!(late, StoreError::BlueprintMoved { ref actual, .. } if actual == "approved"),
        "{late}"
    );
    let building = store
        .move_blueprint(&BlueprintMove {
            keep_approval: true,
            ..step(first.id, "approved", "building")
        })
        .unwrap();
    assert_eq!(building.approval, approved.approval);
    assert!(matches!(
        store.move_blueprint(&step(999, "pending", "rejected")),
        Err(StoreError::NoSuchBlueprint(999))
    ));
    let listed: Vec<_> = store.blueprints().unwrap().iter().map(|b| b.id).collect();
    assert_eq!(listed, [second.id, first.id], "newest first");
    // The host building it says it still does, while it is building;
    // nothing of it is audited.
    let audited = kinds(store.as_ref()).len();
    assert!(store.touch_blueprint(first.id, "building", 3_000).unwrap());
    assert!(
        !store
            .touch_blueprint(first.id, "validating", 4_000)
            .unwrap()
    );
    assert!(!store.touch_blueprint(999, "building", 4_000).unwrap());
    assert_eq!(kinds(store.as_ref()).len(), audited);
    let heads = store.blueprint_states().unwrap();
    let proposed: Vec<_> = heads
        .iter()
        .map(|b| (b.author.clone(), b.created_ms))
        .collect();
    let states: Vec<_> = heads
        .into_iter()
        .map(|b| (b.id, b.name, b.state, b.expires_ms, b.updated_ms))
        .collect();
    assert_eq!(
        proposed,
        [("agent:a".to_owned(), 1_000), ("agent:a".to_owned(), 1_000)],
        "who proposed them and when, for the per-day limit"
    );
    assert_eq!(
        states,
        [
            (
                second.id,
                "gen_words_count".into(),
                "pending".into(),
                9_000,
                1_000
            ),
            (
                first.id,
                "gen_words_count".into(),
                "building".into(),
                9_000,
                3_000
            )
        ],
        "where they stand, newest first"
    );
    assert_eq!(
        store.blueprint(first.id).unwrap().unwrap().state,
        "building"
    );
    let moves: Vec<_> = store
        .records_after(0, u64::MAX)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "blueprint-moved")
        .map(|r| r.event)
        .collect();
    assert_eq!(moves.len(), 4, "two proposals, two moves: {moves:?}");
    assert_eq!(moves[0]["to"], "pending");
    assert_eq!(moves[0]["blueprint_sha256"], "sha256:bp");
    assert_eq!(moves[2]["from"], "pending");
    assert_eq!(moves[2]["to"], "approved");
    assert_eq!(moves[2]["builder_sha256"], "sha256:builder");
    assert_eq!(moves[2]["grants_sha256"], "sha256:grants");
    assert_eq!(moves[2]["actor"], "operator:ops");
    store
        .verify_with_host_key(&place.key("host"))
        .unwrap()
        .expect("the chain verifies");
}

/// An activation that supersedes the version before it is one
/// transaction: when one move cannot land, neither does; a move with an
/// artifact keeps the component and its digest goes on the record.
fn blueprint_moves_land_together_with_their_artifact(backend: Backend) {
    let place = Place::new(backend);
    let store = place.open("host");
    let old = store.add_blueprint(&blueprint("gen_words_count")).unwrap();
    let new = store.add_blueprint(&blueprint("gen_words_count")).unwrap();
    assert_eq!(store.blueprint_component(new.id).unwrap(), None);
    let artifact = warden_store::BlueprintArtifact {
        meta: "{\"component_sha256\":\"sha256:c\"}".into(),
        component_sha256: "sha256:c".into(),
        component: vec![0, 97, 115, 109, 255],
    };
    store
        .move_blueprint(&BlueprintMove {
            artifact: Some(artifact.clone()),
            ..step(new.id, "pending", "approved")
        })
        .unwrap();
    assert_eq!(
        store.blueprint_component(new.id).unwrap().as_deref(),
        Some(&artifact.component[..])
    );
    // The second move starts from the wrong state: the first is undone.
    let err = store
        .move_blueprints(&[
            step(new.id, "approved", "building"),
            step(old.id, "active", "superseded"),
        ])
        .unwrap_err();
    assert!(matches!(err, StoreError::BlueprintMoved { .. }), "{err}");
    assert_eq!(store.blueprint(new.id).unwrap().unwrap().state, "approved");
    let both = store
        .move_blueprints(&[
            step(new.id, "approved", "building"),
            step(old.id, "pending", "rejected"),
        ])
        .unwrap();
    assert_eq!(both[0].state, "building");
    assert_eq!(both[1].state, "rejected");
    let kept = store.blueprint(new.id).unwrap().unwrap();
    assert_eq!(kept.artifact.as_deref(), Some(artifact.meta.as_str()));
    let moves: Vec<_> = store
        .records_after(0, u64::MAX)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "blueprint-moved")
        .map(|r| r.event)
        .collect();
    assert_eq!(moves.len(), 5, "two proposals, three moves: {moves:?}");
    assert_eq!(moves[3]["component_sha256"], "sha256:c");
    assert!(moves[4].get("component_sha256").is_none());
    store
        .verify_with_host_key(&place.key("host"))
        .unwrap()
        .expect("the chain verifies");
}

macro_rules! conformance {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $test() { super::$test(super::Backend::Sqlite) } )*
        }
        mod postgres {
            $( #[test] fn $test() { super::$test(super::Backend::Postgres) } )*
        }
    };
}

conformance!(
    rules_are_kept_once_in_order_and_audited,
    approvals_are_answered_once_and_used_once,
    grants_get_new_ids_expire_and_are_revoked_once,
    trust_is_replaced_and_its_changes_audited,
    concurrent_appends_make_one_verifiable_chain,
    async_appends_are_durable_when_they_return,
    records_queued_for_later_are_in_every_read_of_the_log,
    state_survives_reopening_and_the_chain_goes_on,
    a_change_by_another_store_moves_the_grants_version,
    concurrent_trust_writers_lose_no_update,
    shared_plugins_keep_the_newest_change_of_each_name,
    stores_of_one_key_share_its_chain,
    trust_changes_are_kept_beside_the_chain_newest_first,
    an_answer_never_lands_twice_under_a_race,
    any_text_a_call_carries_is_kept,
    asks_racing_from_two_stores_get_ids_of_their_own,
    definition_pins_are_replaced_revoked_and_audited,
    sessions_are_shared_until_dropped_or_expired,
    gaps_recur_by_threshold_window_and_sessions,
    gaps_read_sessions_within_the_window,
    blueprints_move_only_from_where_they_stand,
    blueprint_moves_land_together_with_their_artifact,
);

/// Runs `sql` on the database at `url`.
fn psql(url: &str, sql: &'static str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    });
}

#[test]
fn postgres_refuses_a_database_that_is_not_wardens() {
    let url = new_postgres_database();
    psql(&url, "CREATE TABLE invoices (id INTEGER)");
    let dir = tempfile::tempdir().unwrap();
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let err = PgStore::open(&url, key).unwrap_err().to_string();
    assert!(err.contains("no Warden schema version"), "{err}");
}

#[test]
fn postgres_refuses_a_newer_schema_and_changes_nothing() {
    let place = Place::new(Backend::Postgres);
    drop(place.open("host"));
    let url = place.url.clone().unwrap();
    psql(&url, "UPDATE warden_schema SET version = 999");
    let err = place.try_open("host").unwrap_err().to_string();
    assert!(err.contains("newer than this warden knows"), "{err}");
    let current = format!("UPDATE warden_schema SET version = {PG_SCHEMA_VERSION}");
    psql(&url, current.leak());
    place.open("host");
}

#[test]
fn postgres_that_does_not_answer_is_a_clear_error_without_the_password() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let url = format!("postgres://warden:hunter2@127.0.0.1:{port}/warden");
    let err = PgStore::open(&url, key).unwrap_err().to_string();
    assert!(err.contains("connecting to PostgreSQL"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(
        !err.contains("hunter2"),
        "the password is never shown: {err}"
    );
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let err = PgStore::open("mysql://nope", key).unwrap_err().to_string();
    assert!(err.contains("not a PostgreSQL URL"), "{err}");
}

#[test]
fn postgres_audit_records_edited_or_deleted_in_place_are_found() {
    let place = Place::new(Backend::Postgres);
    let store = place.open("host");
    for n in 0..5 {
        store.append(&outcome(n)).unwrap();
    }
    let key = place.key("host");
    assert!(store.verify_with_host_key(&key).unwrap().is_ok());
    let url = place.url.clone().unwrap();
    psql(
        &url,
        "UPDATE audit SET body = replace(body, '\"r2\"', '\"r9\"') WHERE seq = 3",
    );
    let broken = store.verify_with_host_key(&key).unwrap().unwrap_err();
    assert_eq!(
        broken,
        warden_store::Break::Edited {
            seq: 3,
            detail: "its content does not match its hash".into()
        }
    );
    psql(&url, "DELETE FROM audit WHERE seq = 3");
    let broken = store.verify(&key.public()).unwrap().unwrap_err();
    assert_eq!(broken, warden_store::Break::Deleted { seq: 3, next: 4 });
}

/// The attacker writes to the shared database but holds no replica key
/// and not the audit root: a chain registered there with a key of their
/// own verifies by itself (its records are signed with that key), so with
/// the deployment's root every chain's key must carry the root's
/// endorsement, which they cannot make, copy to their key, or keep while
/// swapping a real chain's key.
#[test]
fn postgres_chains_without_the_roots_endorsement_are_refused() {
    let place = Place::new(Backend::Postgres);
    let root = SecretKey::generate().unwrap();
    let (a, b) = (place.open("a"), place.open("b"));
    let endorse = |name: &str| warden_signing::endorse_audit_key(&root, &place.key(name).public());
    a.endorse(&endorse("a")).unwrap();
    b.endorse(&endorse("b")).unwrap();
    a.append(&outcome(1)).unwrap();
    b.append(&outcome(1)).unwrap();
    a.seal().unwrap();
    b.seal().unwrap();
    let others = a.verify_others(Some(&root.public())).unwrap();
    assert!(others.ok(), "{others:?}");
    assert_eq!(others.endorsed, 2, "both chains, this host's included");
    // Without a root nothing is asked of endorsements.
    assert_eq!(a.verify_others(None).unwrap().endorsed, 0);

    // A forged chain: the attacker's own key, registered and appended
    // through a store of their own, which verifies by itself.
    let forged = place.open("forged");
    forged.append(&outcome(1)).unwrap();
    forged.seal().unwrap();
    let forged_chain = place.key("forged").public().key_id().as_str().to_owned();
    let others = a.verify_others(Some(&root.public())).unwrap();
    assert!(
        others.chains.iter().all(|c| c.verdict.is_ok()),
        "it verifies alone"
    );
    assert!(!others.ok());
    assert_eq!(
        others.unendorsed,
        vec![warden_store::Unendorsed::Missing {
            chain: forged_chain.clone()
        }]
    );
    assert!(others.unendorsed[0].to_string().contains("no endorsement"));

    // A's endorsement copied onto the forged chain, and a replica
    // endorsing itself: neither is the root's endorsement of that key.
    let url = place.url.clone().unwrap();
    let a_chain = place.key("a").public().key_id().as_str().to_owned();
    let copy = format!(
        "UPDATE audit_chains SET endorsement = (SELECT endorsement FROM audit_chains \
         WHERE chain = '{a_chain}') WHERE chain = '{forged_chain}'"
    );
    psql(&url, copy.leak());
    let invalid = vec![warden_store::Unendorsed::Invalid {
        chain: forged_chain.clone(),
    }];
    assert_eq!(
        a.verify_others(Some(&root.public())).unwrap().unendorsed,
        invalid
    );
    forged
        .endorse(&warden_signing::endorse_audit_key(
            &place.key("forged"),
            &place.key("forged").public(),
        ))
        .unwrap();
    assert_eq!(
        a.verify_others(Some(&root.public())).unwrap().unendorsed,
        invalid
    );

    // B's registered key swapped for the attacker's, endorsement kept.
    let b_chain = place.key("b").public().key_id().as_str().to_owned();
    let swap = format!(
        "DELETE FROM audit WHERE chain = '{forged_chain}'; \
         DELETE FROM audit_chains WHERE chain = '{forged_chain}'; \
         UPDATE audit_chains SET public_key = '{}' WHERE chain = '{b_chain}'",
        place.key("forged").public().to_text().trim()
    );
    psql(&url, swap.leak());
    let others = a.verify_others(Some(&root.public()));
    // The walk refuses a key that is not the chain's own before any
    // endorsement is looked at; either way the chain is not accepted.
    assert!(others.is_err() || !others.unwrap().ok());

    // A single host's database holds one chain: nothing to endorse.
    let single = Place::new(Backend::Sqlite).open("host");
    assert!(single.endorse(&endorse("host")).is_err());
}

/// Replicas anchor each other's chain heads when they seal: a chain cut
/// short at a signed record (which verifies by itself), rewritten from an
/// anchored record on, or removed with its registration is found through
/// the anchors the other chain holds. A single SQLite host has no others.
#[test]
fn postgres_chains_anchor_each_other_so_a_cut_or_removed_chain_is_found() {
    let place = Place::new(Backend::Postgres);
    let (a, b) = (place.open("a"), place.open("b"));
    let b_chain = place.key("b").public().key_id().as_str().to_owned();
    for n in 0..5 {
        a.append(&outcome(n)).unwrap();
    }
    for n in 0..3 {
        b.append(&outcome(n)).unwrap();
    }
    a.seal().unwrap();
    b.seal().unwrap();
    let others = a.verify_others(None).unwrap();
    assert!(others.ok(), "{others:?}");
    assert_eq!(others.chains.len(), 1);
    assert_eq!(others.chains[0].chain, b_chain);
    assert_eq!(others.anchors, 2, "each chain anchors the other once");
    // Sealing again with no other head moved anchors nothing new (B's
    // anchor of A is no move: idle replicas do not anchor each other's
    // anchors forever).
    let before = a.tail(1).unwrap()[0].seq;
    a.seal().unwrap();
    assert_eq!(a.tail(1).unwrap()[0].seq, before);
    assert_eq!(kinds(a.as_ref()).last().unwrap(), "chain-heads");

    // B goes on, A anchors B's new head; then B's tail is deleted back
    // to B's signed anchor record, which leaves a chain that verifies.
    for n in 3..6 {
        b.append(&outcome(n)).unwrap();
    }
    b.seal().unwrap();
    a.seal().unwrap();
    assert!(a.verify_others(None).unwrap().ok());
    let url = place.url.clone().unwrap();
    let cut = format!("DELETE FROM audit WHERE chain = '{b_chain}' AND seq > 4");
    psql(&url, cut.leak());
    let others = a.verify_others(None).unwrap();
    assert!(
        others.chains[0].verdict.is_ok(),
        "the cut chain verifies alone"
    );
    assert!(!others.ok());
    assert!(
        matches!(
            &others.broken_anchors[..],
            [warden_store::AnchorBreak::Missing {
                seq: 7,
                last: Some(4),
                ..
            }]
        ),
        "{:?}",
        others.broken_anchors
    );
    assert!(
        others.broken_anchors[0]
            .to_string()
            .contains("deleted from its end"),
        "{}",
        others.broken_anchors[0]
    );

    // Rewritten: the anchored record's hash is not the one anchored.
    let rewrite =
        format!("UPDATE audit SET hash = repeat('0', 64) WHERE chain = '{b_chain}' AND seq = 3");
    psql(&url, rewrite.leak());
    let others = a.verify_others(None).unwrap();
    assert!(others.chains[0].verdict.is_err(), "its own walk fails too");
    assert!(
        others
            .broken_anchors
            .iter()
            .any(|b| matches!(b, warden_store::AnchorBreak::Rewritten { seq: 3, .. })),
        "{:?}",
        others.broken_anchors
    );

    // Removed, registration and all.
    let remove = format!(
        "DELETE FROM audit WHERE chain = '{b_chain}'; DELETE FROM audit_chains WHERE chain = '{b_chain}'"
    );
    psql(&url, remove.leak());
    let others = a.verify_others(None).unwrap();
    assert!(others.chains.is_empty());
    assert!(
        others
            .broken_anchors
            .iter()
            .all(|b| matches!(b, warden_store::AnchorBreak::Missing { last: None, .. })),
        "{:?}",
        others.broken_anchors
    );
    assert_eq!(others.broken_anchors.len(), 2);

    // One SQLite host: nothing else to check.
    let single = Place::new(Backend::Sqlite).open("host");
    single.append(&outcome(1)).unwrap();
    single.seal().unwrap();
    assert_eq!(
        single.verify_others(None).unwrap(),
        warden_store::Others::default()
    );
}
