//! Capability grants through the gate, with an injected clock and real
//! grants in a real state database (the server's store-backed source): a grant allows a call only inside its
//! window, a revoked grant stops at once, the decision names the grant,
//! and both decision and outcome land in the verified audit chain.

use std::sync::Arc;

use serde_json::json;
use warden_api::{CallRequest, FsAccess, ToolHost};
use warden_gate::Gate;
use warden_policy::config::PolicyConfig;
use warden_policy::{Boundary, Capability, CapabilityGrant, Layer, Policy, Verdict};
use warden_server::StoreGrants;
use warden_store::{Hooks, SqliteStore, Store, host_key};

use crate::common::{self, ManualClock};

struct Fixture {
    gate: Gate,
    clock: Arc<ManualClock>,
    store: Arc<dyn Store>,
    dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws/out")).unwrap();
    let key = host_key(&dir.path().join("host.key")).unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.path().join("warden.db"), key).unwrap());
    let config: PolicyConfig = toml::from_str("[agents.writer]\nlevel = \"standard\"\n").unwrap();
    let policy = Policy::from_config(&config, &warden_api::BUILTIN_ACTION_TYPES).unwrap();
    let clock = ManualClock::at(0);
    let mut builder = Gate::builder()
        .env(crate::common::workspace_env())
        .backend(
            "fs",
            Arc::new(common::fs_plugin().await),
            common::grant(&dir.path().join("ws"), FsAccess::ReadWrite),
        )
        .unwrap()
        .journal(Arc::new(Hooks(store.clone())))
        .grants(Arc::new(StoreGrants::new(store.clone(), clock.clone())))
        .clock(clock.clone());
    for a in policy.agents() {
        builder = builder.agent(a.clone());
    }
    Fixture {
        gate: builder.build(),
        clock,
        store,
        dir,
    }
}

fn write(path: &str) -> CallRequest {
    let mut context = common::context();
    context.agent = "writer".into();
    CallRequest {
        tool: "fs_write".into(),
        args: json!({"path": path, "content": "x"}),
        context,
    }
}

fn grant(from: u64, to: u64) -> CapabilityGrant {
    CapabilityGrant {
        id: String::new(),
        agent: "writer".into(),
        session: None,
        capability: Capability::Tool("fs_write".into()),
        boundary: Boundary {
            paths: vec!["/workspace/out".into()],
            ..Boundary::default()
        },
        goal: "write the report".into(),
        issuer: "operator".into(),
        valid_from_ms: from,
        valid_to_ms: to,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_applies_only_inside_its_window() {
    let f = fixture().await;
    let g = f.store.issue_grant(grant(1_000, 2_000), None).unwrap();
    for (now, verdict) in [
        (999, Verdict::Ask),
        (1_000, Verdict::Allow),
        (1_999, Verdict::Allow),
        (2_000, Verdict::Ask),
    ] {
        f.clock.set(now);
        let d = f.gate.decide(&write("out/a.txt"));
        assert_eq!(d.decision, verdict, "at {now}: {d:?}");
        if verdict == Verdict::Allow {
            assert_eq!(d.layer, Layer::Grant);
            assert_eq!(d.grant.as_deref(), Some(g.id.as_str()));
        } else {
            assert!(d.reason.contains("request_capability"), "{}", d.reason);
        }
    }
    // Outside the boundary the grant never applies.
    f.clock.set(1_500);
    assert_eq!(f.gate.decide(&write("notes.txt")).decision, Verdict::Ask);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_grant_stops_at_once() {
    let f = fixture().await;
    let g = f.store.issue_grant(grant(0, u64::MAX / 2), None).unwrap();
    f.clock.set(10);
    assert_eq!(f.gate.decide(&write("out/a.txt")).decision, Verdict::Allow);
    f.store.revoke_grant(&g.id, &operator()).unwrap();
    assert_eq!(f.gate.decide(&write("out/a.txt")).decision, Verdict::Ask);
}

#[tokio::test(flavor = "multi_thread")]
async fn granted_calls_are_audited_with_their_grant() {
    let f = fixture().await;
    let g = f.store.issue_grant(grant(0, u64::MAX / 2), None).unwrap();
    f.clock.set(10);
    let envelope = f.gate.call(write("out/a.txt")).await;
    assert!(envelope.is_ok(), "{envelope:?}");
    assert_eq!(
        std::fs::read_to_string(f.dir.path().join("ws/out/a.txt")).unwrap(),
        "x"
    );
    let records = f.store.tail(2).unwrap();
    assert_eq!(records[0].kind, "decision");
    assert_eq!(records[0].event["grant"], g.id.as_str());
    assert_eq!(records[0].event["layer"], "grant");
    assert!(records[0].event.get("args").is_none());
    assert_eq!(records[1].kind, "outcome");
    assert_eq!(records[1].event["ok"], true);
    let key = host_key(&f.dir.path().join("host.key")).unwrap();
    assert!(f.store.verify_with_host_key(&key).unwrap().is_ok());
}

fn operator() -> warden_api::Attribution {
    warden_api::Attribution {
        actor: "operator".into(),
        confirm: true,
        reason: Some("test".into()),
    }
}

/// A grant bounded to `/workspace/out` and a symlink inside it that leads
/// to another directory of the workspace: a write through the link is
/// outside the boundary, so the grant does not allow it (the call asks,
/// and with nobody to answer it is refused and nothing is written); a
/// write to a real file inside the boundary runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_inside_the_boundary_does_not_carry_a_grant_out() {
    let f = fixture().await;
    let ws = f.dir.path().join("ws");
    std::fs::create_dir_all(ws.join("keys")).unwrap();
    std::os::unix::fs::symlink("../keys", ws.join("out/link")).unwrap();
    f.store.issue_grant(grant(0, u64::MAX / 2), None).unwrap();
    f.clock.set(10);

    let through_link = f.gate.decide(&write("out/link/id_rsa"));
    assert_eq!(through_link.decision, Verdict::Ask, "{through_link:?}");
    assert_ne!(through_link.layer, Layer::Grant);
    let envelope = f.gate.call(write("out/link/id_rsa")).await;
    assert!(!envelope.is_ok(), "{envelope:?}");
    assert!(!ws.join("keys/id_rsa").exists());

    let inside = f.gate.call(write("out/report.txt")).await;
    assert!(inside.is_ok(), "{inside:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("out/report.txt")).unwrap(),
        "x"
    );
}
