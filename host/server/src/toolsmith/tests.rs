#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use warden_api::BlueprintDesk;

use super::*;

struct Fixed(AtomicU64);

impl Clock for Fixed {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn blueprint() -> serde_json::Value {
    json!({
        "capability": "words:count",
        "title": "Count words",
        "description": "Counts the words of a text.",
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object"},
        "body": {"rust": {"lib_rs": "// counts words\n"}},
        "cases": [
            {"name": "one", "args": {}, "expect": {"ok": {}}},
            {"name": "two", "args": {}, "expect": {"ok": {}}},
            {"name": "bad", "args": {}, "expect": {"error": {}}}
        ],
        "rationale": "asked for"
    })
}

fn config(network: &str) -> Config {
    let text = format!(
        "[toolsmith]\nenabled = true\ncategory = \"analytics\"\napproval-ttl-secs = 60\n\
         [toolsmith.sandbox]\nnetwork = {network}\n\
         [toolsmith.capabilities.\"words:*\"]\naction-type = \"code:read\"\n"
    );
    toml::from_str(&text).unwrap()
}

fn ops() -> Attribution {
    Attribution {
        actor: "ops".into(),
        confirm: true,
        reason: Some("fine".into()),
    }
}

struct World {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    clock: Arc<Fixed>,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::state::open(dir.path(), &Default::default()).unwrap();
    World {
        _dir: dir,
        store,
        clock: Arc::new(Fixed(AtomicU64::new(1_000))),
    }
}

impl World {
    fn smith(&self, config: &Config) -> Toolsmith {
        Toolsmith::new(self.store.clone(), config, self.clock.clone())
    }
}

#[test]
fn nothing_is_built_without_an_approval_that_still_holds() {
    let w = world();
    let smith = w.smith(&config("\"none\""));
    let p = smith.propose_value(blueprint(), "agent:a").unwrap();
    assert!(
        smith.approved_for_build(p.id).is_err(),
        "pending: nothing is built"
    );
    smith.approve(p.id, &ops(), None).unwrap();
    assert_eq!(smith.approved_for_build(p.id).unwrap().id, p.id);

    // The config now grants the network: the approval is void, and the
    // blueprint waits for a person again.
    let wider = w.smith(&config("{ allow = [\"api.example.com:443\"] }"));
    let err = wider.approved_for_build(p.id).unwrap_err().to_string();
    assert!(err.contains("the grants changed"), "{err}");
    let back = w.store.blueprint(p.id).unwrap().unwrap();
    assert_eq!(back.state, "pending");
    assert_eq!(back.approval, None);
    assert!(wider.approved_for_build(p.id).is_err());
}

#[test]
fn an_unanswered_proposal_expires_as_rejected() {
    let w = world();
    let smith = w.smith(&config("\"none\""));
    let p = smith
        .propose(&blueprint().to_string(), "operator:ops")
        .unwrap();
    assert_eq!(p.expires_ms, 61_000);
    w.clock.0.store(61_000, Ordering::SeqCst);
    assert_eq!(smith.expire().unwrap(), [p.id]);
    let gone = w.store.blueprint(p.id).unwrap().unwrap();
    assert_eq!(gone.state, "rejected");
    assert_eq!(gone.actor.as_deref(), Some("host"));
    let err = smith.approve(p.id, &ops(), None).unwrap_err().to_string();
    assert!(err.contains("cannot move from rejected"), "{err}");
}

#[test]
fn agents_propose_through_the_desk_and_get_pending() {
    let w = world();
    let smith = w.smith(&config("\"none\""));
    let got = BlueprintDesk::propose(&smith, "alice", "s1", blueprint()).unwrap();
    assert_eq!(
        (got.name.as_str(), got.state.as_str()),
        ("gen_words_count", "pending")
    );
    let mut named = blueprint();
    named["name"] = json!("fs_read");
    let err = BlueprintDesk::propose(&smith, "alice", "s1", named).unwrap_err();
    assert!(err.message.contains("unknown field `name`"), "{err}");
}

#[test]
fn a_blueprint_for_a_recorded_gap_needs_its_witness() {
    let w = world();
    let config = config("\"none\"");
    let smith = w.smith(&config);
    // Nobody asked yet: no witness to render.
    smith.propose_value(blueprint(), "agent:a").unwrap();
    let rule = config.toolsmith.gap_rule().unwrap();
    w.store
        .record_gap(
            &warden_store::NewGap {
                signature: "words:count".into(),
                agent: "alice".into(),
                session: "s1".into(),
                asked: "count_words".into(),
                at_ms: 1_000,
            },
            &rule,
        )
        .unwrap();
    let err = smith
        .propose_value(blueprint(), "agent:b")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("witness") && err.contains("count_words"),
        "{err}"
    );
    let mut witnessed = blueprint();
    witnessed["witness"] = json!({"text": "three words here"});
    let kept = smith.propose_value(witnessed.clone(), "agent:b").unwrap();
    let view = smith.show(kept.id).unwrap();
    assert_eq!(
        view.blueprint.witness,
        Some(json!({"text": "three words here"}))
    );
    // A witness is the arguments object of a call.
    witnessed["witness"] = json!("three words");
    let err = smith
        .propose_value(witnessed, "agent:b")
        .unwrap_err()
        .to_string();
    assert!(err.contains("witness"), "{err}");
}

#[test]
fn one_author_cannot_flood_the_operators() {
    let w = world();
    let smith = w.smith(&config("\"none\""));
    for _ in 0..5 {
        smith.propose_value(blueprint(), "agent:a").unwrap();
    }
    let err = smith
        .propose_value(blueprint(), "agent:a")
        .unwrap_err()
        .to_string();
    assert!(err.contains("max-blueprints-per-day"), "{err}");
    smith.propose_value(blueprint(), "agent:b").unwrap();
    w.clock
        .0
        .store(1_000 + 24 * 60 * 60 * 1000, Ordering::SeqCst);
    smith.propose_value(blueprint(), "agent:a").unwrap();
}

#[test]
fn a_clients_model_answers_only_what_it_was_asked_once() {
    use warden_api::SamplingAuthor;
    let w = world();
    let config = config("\"none\"");
    let smith = Arc::new(w.smith(&config));
    let rule = config.toolsmith.gap_rule().unwrap();
    w.store
        .record_gap(
            &warden_store::NewGap {
                signature: "words:count".into(),
                agent: "alice".into(),
                session: "s1".into(),
                asked: "words_count".into(),
                at_ms: 1_000,
            },
            &rule,
        )
        .unwrap();
    let desk = SamplingDesk::new(smith, std::time::Duration::from_secs(60));
    let mut witnessed = blueprint();
    witnessed["witness"] = json!({});
    let text = witnessed.to_string();

    // Nobody was asked: an answer is refused.
    let err = desk.written("alice", "words:count", &text).unwrap_err();
    assert!(err.message.contains("was not asked"), "{err}");

    desk.recurred("alice", "s1", "words:count");
    assert!(desk.take("alice", "s2").is_none(), "another session's call");
    assert!(desk.take("bob", "s1").is_none(), "another agent's call");
    let brief = desk.take("alice", "s1").unwrap().unwrap();
    assert_eq!(brief.signature, "words:count");
    assert!(
        brief.request.contains("gen_words_count"),
        "{}",
        brief.request
    );
    assert!(brief.system.contains("witness"), "{}", brief.system);
    assert!(desk.take("alice", "s1").is_none(), "asked once");

    // Another agent cannot answer alice's question.
    let err = desk.written("bob", "words:count", &text).unwrap_err();
    assert!(err.message.contains("was not asked"), "{err}");
    // A blueprint in a code fence, for what was asked, is kept, once.
    let kept = desk
        .written("alice", "words:count", &format!("```json\n{text}\n```"))
        .unwrap();
    assert_eq!(
        (kept.name.as_str(), kept.state.as_str()),
        ("gen_words_count", "pending")
    );
    let stored = w.store.blueprint(kept.id).unwrap().unwrap();
    assert_eq!(stored.author, "sampling:alice");
    let err = desk.written("alice", "words:count", &text).unwrap_err();
    assert!(err.message.contains("already taken"), "{err}");

    // A blueprint for another capability than the one asked about.
    desk.recurred("alice", "s1", "words:count");
    desk.take("alice", "s1").unwrap().unwrap();
    let mut other = witnessed.clone();
    other["capability"] = json!("words:split");
    let err = desk
        .written("alice", "words:count", &other.to_string())
        .unwrap_err();
    assert!(
        err.message.contains("wrote a blueprint for `words:split`"),
        "{err}"
    );
}

/// A host killed after its blueprint was validated and signed, before
/// the move to `active`: nobody will activate it, so like an
/// interrupted build it is failed once the lease ran out, and not
/// before — never left `validated` for good (where it looks settled
/// and blocks nothing, yet is neither live nor failed).
#[test]
fn a_blueprint_its_host_left_validated_is_failed_as_interrupted_after_the_lease() {
    let w = world();
    let smith = w.smith(&config("\"none\""));
    let p = smith.propose_value(blueprint(), "agent:a").unwrap();
    smith.approve(p.id, &ops(), None).unwrap();
    let mut b = smith.approved_for_build(p.id).unwrap();
    for to in [State::Building, State::Validating, State::Validated] {
        let step = smith.transition(&b, to, "host", None).unwrap();
        b = smith.apply(&[step]).unwrap().pop().unwrap();
    }
    let left = w.clock.0.load(Ordering::SeqCst);
    let lease = super::forge::LEASE;

    w.clock
        .0
        .store(left + lease.as_millis() as u64 - 1, Ordering::SeqCst);
    smith.fail_abandoned(lease).unwrap();
    let kept = w.store.blueprint(p.id).unwrap().unwrap();
    assert_eq!(kept.state, "validated", "within the lease it is left alone");

    w.clock
        .0
        .store(left + lease.as_millis() as u64, Ordering::SeqCst);
    smith.fail_abandoned(lease).unwrap();
    let failed = w.store.blueprint(p.id).unwrap().unwrap();
    assert_eq!(failed.state, "failed");
    let reason = failed.reason.unwrap_or_default();
    assert!(
        reason.contains("interrupted") && reason.contains("validated"),
        "{reason}"
    );
}
