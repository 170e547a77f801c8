use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

const DAY: u64 = DAY_MS;

fn ok(category: &str) -> TrustEvent<'_> {
    TrustEvent::Outcome {
        category,
        ok: true,
        difficulty: 0.8,
    }
}

fn fail(category: &str) -> TrustEvent<'_> {
    TrustEvent::Outcome {
        category,
        ok: false,
        difficulty: 0.8,
    }
}

fn weighted() -> TrustConfig {
    TrustConfig::Weighted(WeightedConfig {
        initial_level: TrustLevel::Sandboxed,
        weights: Weights::default(),
        sandboxed_to_restricted: 0.4,
        restricted_to_standard: 0.6,
        standard_to_elevated: 0.8,
    })
}

fn milestone() -> TrustConfig {
    let c = |tasks, quality, days| Criteria {
        tasks_completed: tasks,
        quality_min: quality,
        time_active_days: days,
        ..Criteria::default()
    };
    TrustConfig::Milestone(MilestoneConfig {
        initial_level: TrustLevel::Sandboxed,
        sandboxed_to_restricted: c(5, 0.7, 0),
        restricted_to_standard: c(20, 0.8, 7),
        standard_to_elevated: Criteria {
            clean_history_days: 14,
            ..Criteria::default()
        },
        re_verification: ReVerification::default(),
    })
}

#[test]
fn disabled_trust_never_changes_anything() {
    let config = TrustConfig::Disabled;
    let mut state = config.initial_state(0);
    for i in 0..100 {
        assert_eq!(
            config.apply(&mut state, ok("file-system"), i),
            Step::default()
        );
    }
    assert_eq!(config.level_for(&state, "file-system"), None);
}

#[test]
fn weighted_trust_climbs_with_good_work_and_stops_before_elevated() {
    let config = weighted();
    let mut state = config.initial_state(0);
    let mut asked = None;
    for i in 0..50 {
        let step = config.apply(&mut state, ok("file-system"), i);
        config.apply(
            &mut state,
            TrustEvent::Feedback {
                category: None,
                score: 1.0,
            },
            i,
        );
        asked = asked.or(step.ask);
    }
    assert_eq!(state.level, TrustLevel::Standard);
    let asked = asked.expect("a promotion to elevated is asked for");
    assert_eq!(asked.to, TrustLevel::Elevated);
    assert_eq!(
        state.awaiting_person.as_ref().map(|p| p.to),
        Some(TrustLevel::Elevated)
    );
    // A person approves: only then elevated.
    approve_promotion(&mut state);
    assert_eq!(state.level, TrustLevel::Elevated);
}

#[test]
fn weighted_trust_falls_when_errors_pile_up() {
    let config = weighted();
    let mut state = config.initial_state(0);
    for i in 0..20 {
        config.apply(&mut state, ok("file-system"), i);
    }
    let climbed = state.level;
    assert!(climbed > TrustLevel::Sandboxed);
    for i in 0..60 {
        config.apply(&mut state, fail("file-system"), 100 + i);
    }
    assert!(state.level < climbed, "{:?}", state.level);
}

#[test]
fn per_category_trust_is_a_matrix() {
    let config = TrustConfig::PerCategory(PerCategoryConfig {
        initial_levels: BTreeMap::from([
            ("file-system".to_owned(), TrustLevel::Restricted),
            ("deployment".to_owned(), TrustLevel::Sandboxed),
        ]),
        default_level: TrustLevel::Sandboxed,
        promotion: BTreeMap::from([
            (
                "file-system".to_owned(),
                Criteria {
                    tasks_completed: 10,
                    ..Criteria::default()
                },
            ),
            (
                "deployment".to_owned(),
                Criteria {
                    tasks_completed: 1,
                    requires_human_approval: true,
                    ..Criteria::default()
                },
            ),
        ]),
    });
    let mut state = config.initial_state(0);
    for i in 0..10 {
        config.apply(&mut state, ok("file-system"), i);
    }
    assert_eq!(
        config.level_for(&state, "file-system"),
        Some(TrustLevel::Standard)
    );
    assert_eq!(
        config.level_for(&state, "deployment"),
        Some(TrustLevel::Sandboxed)
    );
    // Deployment is human-gated even below elevated.
    let step = config.apply(&mut state, ok("deployment"), 20);
    assert_eq!(step.ask.map(|p| p.to), Some(TrustLevel::Restricted));
    assert_eq!(
        config.level_for(&state, "deployment"),
        Some(TrustLevel::Sandboxed)
    );
}

#[test]
fn milestones_promote_then_decay_when_idle_or_failing() {
    let config = milestone();
    let mut state = config.initial_state(0);
    for i in 0..5 {
        config.apply(&mut state, ok("code-execution"), i);
        config.apply(
            &mut state,
            TrustEvent::Feedback {
                category: None,
                score: 0.9,
            },
            i,
        );
    }
    assert_eq!(state.level, TrustLevel::Restricted);
    // Twenty tasks, but not yet seven days active: no promotion.
    for i in 0..20 {
        config.apply(&mut state, ok("code-execution"), 10 + i);
    }
    assert_eq!(state.level, TrustLevel::Restricted);
    config.apply(&mut state, ok("code-execution"), 8 * DAY);
    assert_eq!(state.level, TrustLevel::Standard);
    // Idle for 30 days: one level down.
    let step = config.apply(&mut state, TrustEvent::Tick, 40 * DAY);
    assert_eq!(state.level, TrustLevel::Restricted, "{step:?}");
    // An error rate over 15% demotes too. The first failure finds the
    // record good enough to promote back (this config asks for no clean
    // days); ten failed calls at that level demote it, and the record,
    // now over the limit, keeps it from being promoted again.
    for i in 0..11 {
        config.apply(&mut state, fail("code-execution"), 41 * DAY + i);
    }
    assert_eq!(state.level, TrustLevel::Restricted);
    for i in 11..21 {
        config.apply(&mut state, fail("code-execution"), 41 * DAY + i);
    }
    assert_eq!(state.level, TrustLevel::Sandboxed);
}

/// An agent that comes back after a long idle time is demoted by its
/// first call's outcome: the idle time counts from its previous activity,
/// not from the call that ends it (no tick needs to have run meanwhile).
#[test]
fn a_call_after_a_long_idle_time_demotes_before_it_counts() {
    let config = milestone();
    let mut state = config.initial_state(0);
    for i in 0..25 {
        config.apply(&mut state, ok("code-execution"), i);
        config.apply(
            &mut state,
            TrustEvent::Feedback {
                category: None,
                score: 0.9,
            },
            i,
        );
    }
    config.apply(&mut state, ok("code-execution"), 8 * DAY);
    assert_eq!(state.level, TrustLevel::Standard);
    let step = config.apply(&mut state, ok("code-execution"), 40 * DAY);
    assert_eq!(state.level, TrustLevel::Restricted, "{step:?}");
    assert!(
        step.changed
            .iter()
            .any(|p| p.reason.contains("idle for 32 days")),
        "{step:?}"
    );
}

/// An error rate over the limit demotes one level, judged on the calls
/// since the level last changed. The failures that caused a demotion do
/// not demote again on every later event (a tick, a success), which took
/// an agent from standard to sandboxed within two events of one bad
/// stretch; a new stretch of failures at the lower level still does.
#[test]
fn one_stretch_of_failures_demotes_one_level_not_one_per_event() {
    let clean = |tasks, quality, days| Criteria {
        tasks_completed: tasks,
        quality_min: quality,
        time_active_days: days,
        clean_history_days: 1,
        ..Criteria::default()
    };
    let config = TrustConfig::Milestone(MilestoneConfig {
        initial_level: TrustLevel::Sandboxed,
        sandboxed_to_restricted: clean(5, 0.7, 0),
        restricted_to_standard: clean(20, 0.8, 7),
        standard_to_elevated: clean(1000, 0.9, 30),
        re_verification: ReVerification::default(),
    });
    let mut state = config.initial_state(0);
    for i in 0..25 {
        config.apply(&mut state, ok("code-execution"), DAY + i);
        config.apply(
            &mut state,
            TrustEvent::Feedback {
                category: None,
                score: 0.9,
            },
            DAY + i,
        );
    }
    // One level per event, a day after the first call (a clean day).
    config.apply(&mut state, ok("code-execution"), 9 * DAY);
    config.apply(&mut state, ok("code-execution"), 9 * DAY + 1);
    assert_eq!(state.level, TrustLevel::Standard);

    // A run of failures at standard: one level down, once there are
    // enough calls at that level to judge.
    let mut t = 9 * DAY + 1;
    for _ in 0..10 {
        t += 1;
        config.apply(&mut state, fail("code-execution"), t);
    }
    assert_eq!(state.level, TrustLevel::Restricted);

    // The same failures do not count again: ticks and a success keep it.
    for _ in 0..3 {
        t += 60_000;
        let step = config.apply(&mut state, TrustEvent::Tick, t);
        assert_eq!(state.level, TrustLevel::Restricted, "{step:?}");
    }
    t += 1;
    config.apply(&mut state, ok("code-execution"), t);
    assert_eq!(state.level, TrustLevel::Restricted);

    // Failing on at the lower level demotes again, once there are enough
    // calls at that level to judge.
    for _ in 0..8 {
        t += 1;
        config.apply(&mut state, fail("code-execution"), t);
    }
    assert_eq!(
        state.level,
        TrustLevel::Restricted,
        "nine calls are too few to judge"
    );
    t += 1;
    config.apply(&mut state, fail("code-execution"), t);
    assert_eq!(state.level, TrustLevel::Sandboxed);
}

#[test]
fn configurations_that_start_at_elevated_are_refused() {
    let mut config = weighted();
    if let TrustConfig::Weighted(w) = &mut config {
        w.initial_level = TrustLevel::Elevated;
    }
    assert!(config.validate().unwrap_err().contains("elevated"));
    assert!(weighted().validate().is_ok());
    assert!(milestone().validate().is_ok());
}

fn level() -> impl Strategy<Value = TrustLevel> {
    prop_oneof![
        Just(TrustLevel::Sandboxed),
        Just(TrustLevel::Restricted),
        Just(TrustLevel::Standard),
        Just(TrustLevel::Elevated),
    ]
}

fn criteria() -> impl Strategy<Value = Criteria> {
    (0u64..3, 0.0f64..1.0, 0u64..2, 0u64..2, any::<bool>()).prop_map(|(t, q, a, c, h)| Criteria {
        tasks_completed: t,
        quality_min: q,
        time_active_days: a,
        clean_history_days: c,
        requires_human_approval: h,
    })
}

const CATEGORIES: [&str; 3] = ["file-system", "deployment", "terminal"];

fn config() -> impl Strategy<Value = TrustConfig> {
    let unit = || 0.0f64..=1.0;
    let weighted = (
        level(),
        unit(),
        unit(),
        unit(),
        unit(),
        unit(),
        unit(),
        unit(),
    )
        .prop_map(|(l, a, b, c, d, e, f, g)| {
            TrustConfig::Weighted(WeightedConfig {
                initial_level: l,
                weights: Weights {
                    task_difficulty: d,
                    completion_rate: e,
                    error_rate: f,
                    human_feedback: g,
                },
                sandboxed_to_restricted: a,
                restricted_to_standard: b,
                standard_to_elevated: c,
            })
        });
    let per_category = (level(), prop::collection::vec((level(), criteria()), 3)).prop_map(
        |(default_level, per)| {
            let mut initial_levels = BTreeMap::new();
            let mut promotion = BTreeMap::new();
            for (c, (l, cr)) in CATEGORIES.iter().zip(per) {
                initial_levels.insert(c.to_string(), l);
                promotion.insert(c.to_string(), cr);
            }
            TrustConfig::PerCategory(PerCategoryConfig {
                initial_levels,
                default_level,
                promotion,
            })
        },
    );
    let milestone = (
        level(),
        criteria(),
        criteria(),
        criteria(),
        any::<bool>(),
        0u64..3,
    )
        .prop_map(|(l, a, b, c, enabled, days)| {
            TrustConfig::Milestone(MilestoneConfig {
                initial_level: l,
                sandboxed_to_restricted: a,
                restricted_to_standard: b,
                standard_to_elevated: c,
                re_verification: ReVerification {
                    enabled,
                    interval_days: days,
                    decay_on_idle_days: days,
                    decay_on_error_rate: 1.0,
                },
            })
        });
    prop_oneof![
        Just(TrustConfig::Disabled),
        weighted,
        per_category,
        milestone
    ]
}

#[derive(Debug, Clone)]
enum Ev {
    Outcome(usize, bool, f64),
    Feedback(Option<usize>, f64),
    Tick,
}

fn events() -> impl Strategy<Value = Vec<(Ev, u64)>> {
    let ev = prop_oneof![
        (0usize..3, any::<bool>(), 0.0f64..=1.0).prop_map(|(c, o, d)| Ev::Outcome(c, o, d)),
        (prop::option::of(0usize..3), 0.0f64..=1.0).prop_map(|(c, s)| Ev::Feedback(c, s)),
        Just(Ev::Tick),
    ];
    prop::collection::vec((ev, 0u64..(3 * DAY)), 0..200)
}

fn any_elevated(state: &TrustState) -> bool {
    state.level == TrustLevel::Elevated
        || state
            .categories
            .values()
            .any(|l| *l == TrustLevel::Elevated)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The security invariant: whatever the strategy and its settings
    /// (including zero thresholds and no human-approval flags), and
    /// whatever the agent does, no event promotes to elevated. Only a
    /// person's approval does.
    #[test]
    fn no_strategy_or_configuration_promotes_to_elevated_without_a_person(
        config in config(),
        events in events(),
    ) {
        // Starting at elevated is refused by validation; the invariant is
        // about promotion, so start from what validation admits.
        prop_assume!(config.validate().is_ok());
        let mut now = 0;
        let mut state = config.initial_state(now);
        prop_assert!(!any_elevated(&state));
        for (ev, dt) in events {
            now += dt;
            let event = match ev {
                Ev::Outcome(c, ok, d) => TrustEvent::Outcome { category: CATEGORIES[c], ok, difficulty: d },
                Ev::Feedback(c, s) => TrustEvent::Feedback { category: c.map(|c| CATEGORIES[c]), score: s },
                Ev::Tick => TrustEvent::Tick,
            };
            let step = config.apply(&mut state, event, now);
            prop_assert!(!any_elevated(&state), "{:?} reached elevated by {:?}", config, event);
            prop_assert!(step.changed.iter().all(|c| c.to != TrustLevel::Elevated));
        }
    }
}

#[test]
fn the_invariant_test_can_see_an_elevation_attempt() {
    // With every threshold at zero, strategies do try to reach elevated:
    // the attempt is turned into a request for a person.
    let config = TrustConfig::Weighted(WeightedConfig {
        initial_level: TrustLevel::Standard,
        weights: Weights::default(),
        sandboxed_to_restricted: 0.0,
        restricted_to_standard: 0.0,
        standard_to_elevated: 0.0,
    });
    let mut state = config.initial_state(0);
    let step = config.apply(&mut state, ok("file-system"), 1);
    assert_eq!(step.ask.map(|p| p.to), Some(TrustLevel::Elevated));
    assert_eq!(state.level, TrustLevel::Standard);
}
