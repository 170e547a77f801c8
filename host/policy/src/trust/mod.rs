//! Progressive trust (reference 000, "Progressive Trust"): agents earn
//! access levels from call outcomes and human feedback, under one of four
//! strategies — disabled, weighted, per-category, milestone (with
//! re-verification and decay).
//!
//! Attack: an agent gaming its way to production access — many easy
//! successful calls, or a configuration that sets thresholds to zero.
//! [`TrustConfig::apply`] is the only way outcomes and feedback change a
//! level, and it never raises any level to elevated: such a promotion
//! becomes a request for a person ([`Step::ask`]), which only
//! [`approve_promotion`] — called when a person approved — applies.
//! Pure: the caller passes the time.

mod config;
mod strategy;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use config::{
    Criteria, MilestoneConfig, PerCategoryConfig, ReVerification, TrustConfig, TrustLevel,
    WeightedConfig, Weights,
};

const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// What trust has seen of an agent (overall, or in one category).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrustStats {
    pub ok: u64,
    pub failed: u64,
    pub difficulty_sum: f64,
    pub feedback_sum: f64,
    pub feedback_count: u64,
    pub first_ms: u64,
    pub last_active_ms: u64,
    pub last_error_ms: Option<u64>,
}

impl TrustStats {
    /// Every outcome seen, as one tally.
    pub fn tally(&self) -> Tally {
        Tally {
            ok: self.ok,
            failed: self.failed,
        }
    }

    pub fn error_rate(&self) -> f64 {
        self.tally().error_rate()
    }

    /// Mean human feedback (0..=1); 0 without any.
    pub fn quality(&self) -> f64 {
        if self.feedback_count == 0 {
            0.0
        } else {
            self.feedback_sum / self.feedback_count as f64
        }
    }

    fn meets(&self, c: &Criteria, now_ms: u64) -> bool {
        let active_days = now_ms.saturating_sub(self.first_ms) / DAY_MS;
        let clean = match self.last_error_ms {
            None => now_ms.saturating_sub(self.first_ms) / DAY_MS >= c.clean_history_days,
            Some(e) => now_ms.saturating_sub(e) / DAY_MS >= c.clean_history_days,
        };
        self.ok >= c.tasks_completed
            && (c.quality_min <= 0.0 || self.quality() >= c.quality_min)
            && active_days >= c.time_active_days
            && clean
    }
}

/// Call outcomes since the agent's level last changed: what the
/// milestone strategy's error-rate decay judges. Lifetime counts would
/// keep a rate that caused one demotion over the limit for many calls
/// after, and demote again on every later event (a tick, a success): one
/// stretch of failures took an agent from standard to sandboxed in two
/// events. Judged on this tally, a stretch demotes one level, and a new
/// stretch at the lower level is needed to demote again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tally {
    pub ok: u64,
    pub failed: u64,
}

impl Tally {
    pub fn calls(&self) -> u64 {
        self.ok + self.failed
    }

    pub fn error_rate(&self) -> f64 {
        if self.calls() == 0 {
            0.0
        } else {
            self.failed as f64 / self.calls() as f64
        }
    }
}

/// A level change: applied, or waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promotion {
    /// The category, for per-category trust.
    pub category: Option<String>,
    pub from: TrustLevel,
    pub to: TrustLevel,
    pub reason: String,
}

/// One agent's trust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustState {
    /// The agent's level (weighted and milestone strategies).
    pub level: TrustLevel,
    /// Levels per category (per-category strategy).
    #[serde(default)]
    pub categories: BTreeMap<String, TrustLevel>,
    #[serde(default)]
    pub stats: TrustStats,
    #[serde(default)]
    pub category_stats: BTreeMap<String, TrustStats>,
    /// A promotion a person must approve.
    #[serde(default)]
    pub awaiting_person: Option<Promotion>,
    #[serde(default)]
    pub last_verified_ms: u64,
    /// Outcomes since `level` last changed (states stored before this
    /// field start it at zero).
    #[serde(default)]
    pub at_level: Tally,
}

/// Something trust learns from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrustEvent<'a> {
    /// A call ended; `difficulty` in 0..=1.
    Outcome {
        category: &'a str,
        ok: bool,
        difficulty: f64,
    },
    /// A person rated the agent's work, 0..=1.
    Feedback {
        category: Option<&'a str>,
        score: f64,
    },
    /// Time passed (re-verification and decay).
    Tick,
}

/// What one event changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// Changes applied (promotions below elevated, demotions).
    pub changed: Vec<Promotion>,
    /// A promotion that waits for a person (recorded in the state too).
    pub ask: Option<Promotion>,
}

impl TrustConfig {
    /// Rejects what would make trust meaningless or unsafe: a strategy
    /// that starts agents at elevated, or factors outside 0..=1.
    pub fn validate(&self) -> Result<(), String> {
        let not_elevated = |l: TrustLevel, key: &str| {
            if l == TrustLevel::Elevated {
                Err(format!(
                    "progressive-trust.{key}: trust cannot start agents at elevated; that takes a person (set the agent's level)"
                ))
            } else {
                Ok(())
            }
        };
        let unit = |v: f64, key: &str| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("progressive-trust.{key}: {v} is outside 0..=1"))
            }
        };
        match self {
            TrustConfig::Disabled => Ok(()),
            TrustConfig::Weighted(w) => {
                not_elevated(w.initial_level, "initial-level")?;
                unit(w.sandboxed_to_restricted, "sandboxed-to-restricted")?;
                unit(w.restricted_to_standard, "restricted-to-standard")?;
                unit(w.standard_to_elevated, "standard-to-elevated")?;
                for (v, k) in [
                    (w.weights.task_difficulty, "task-difficulty"),
                    (w.weights.completion_rate, "completion-rate"),
                    (w.weights.error_rate, "error-rate"),
                    (w.weights.human_feedback, "human-feedback"),
                ] {
                    unit(v, &format!("weights.{k}"))?;
                }
                Ok(())
            }
            TrustConfig::PerCategory(p) => {
                not_elevated(p.default_level, "default-level")?;
                for (c, l) in &p.initial_levels {
                    not_elevated(*l, &format!("initial-levels.{c}"))?;
                }
                Ok(())
            }
            TrustConfig::Milestone(m) => {
                not_elevated(m.initial_level, "initial-level")?;
                unit(
                    m.re_verification.decay_on_error_rate,
                    "re-verification.decay-on-error-rate",
                )
            }
        }
    }

    /// A new agent's trust.
    pub fn initial_state(&self, now_ms: u64) -> TrustState {
        let level = match self {
            TrustConfig::Disabled => TrustLevel::Standard,
            TrustConfig::Weighted(w) => w.initial_level,
            TrustConfig::PerCategory(p) => p.default_level,
            TrustConfig::Milestone(m) => m.initial_level,
        };
        let categories = match self {
            TrustConfig::PerCategory(p) => p.initial_levels.clone(),
            _ => BTreeMap::new(),
        };
        TrustState {
            level: level.min(TrustLevel::Standard),
            categories,
            stats: TrustStats {
                first_ms: now_ms,
                last_active_ms: now_ms,
                ..TrustStats::default()
            },
            category_stats: BTreeMap::new(),
            awaiting_person: None,
            last_verified_ms: now_ms,
            at_level: Tally::default(),
        }
    }

    /// Learns from `event`. Never raises a level to elevated: that
    /// becomes [`Step::ask`].
    pub fn apply(&self, state: &mut TrustState, event: TrustEvent<'_>, now_ms: u64) -> Step {
        // Idle time runs until this event, which `record` counts as
        // activity: strategies judge idleness from the activity before it.
        let active_before = state.stats.last_active_ms;
        record(state, event, now_ms);
        let before = state.clone();
        let mut step = match self {
            TrustConfig::Disabled => Step::default(),
            TrustConfig::Weighted(w) => strategy::weighted(w, state),
            TrustConfig::PerCategory(p) => strategy::per_category(p, state, event, now_ms),
            TrustConfig::Milestone(m) => strategy::milestone(m, state, now_ms, active_before),
        };
        guard(&before, state, &mut step);
        if state.level != before.level {
            state.at_level = Tally::default();
        }
        if let Some(ask) = &step.ask {
            state.awaiting_person = Some(ask.clone());
        }
        step
    }

    /// The levels trust gives the agent, for the policy's category gate;
    /// `None` when trust is disabled.
    pub fn levels(&self, state: &TrustState) -> Option<crate::TrustLevels> {
        match self {
            TrustConfig::Disabled => None,
            TrustConfig::PerCategory(p) => Some(crate::TrustLevels {
                overall: Some(p.default_level.level()),
                categories: state
                    .categories
                    .iter()
                    .map(|(c, l)| (c.clone(), l.level()))
                    .collect(),
            }),
            _ => Some(crate::TrustLevels {
                overall: Some(state.level.level()),
                categories: std::collections::BTreeMap::new(),
            }),
        }
    }

    /// The level trust gives the agent for tools of `category`; `None`
    /// when trust is disabled (the configured level applies).
    pub fn level_for(&self, state: &TrustState, category: &str) -> Option<TrustLevel> {
        match self {
            TrustConfig::Disabled => None,
            TrustConfig::PerCategory(p) => Some(
                state
                    .categories
                    .get(category)
                    .copied()
                    .unwrap_or(p.default_level),
            ),
            _ => Some(state.level),
        }
    }
}

fn record(state: &mut TrustState, event: TrustEvent<'_>, now_ms: u64) {
    let bump = |s: &mut TrustStats| {
        if s.first_ms == 0 {
            s.first_ms = now_ms;
        }
    };
    match event {
        TrustEvent::Outcome {
            category,
            ok,
            difficulty,
        } => {
            let d = if difficulty.is_finite() {
                difficulty.clamp(0.0, 1.0)
            } else {
                0.0
            };
            for s in [
                &mut state.stats,
                state.category_stats.entry(category.to_owned()).or_default(),
            ] {
                bump(s);
                s.last_active_ms = now_ms;
                if ok {
                    s.ok += 1;
                    s.difficulty_sum += d;
                } else {
                    s.failed += 1;
                    s.last_error_ms = Some(now_ms);
                }
            }
            if ok {
                state.at_level.ok += 1;
            } else {
                state.at_level.failed += 1;
            }
        }
        TrustEvent::Feedback { category, score } => {
            let score = if score.is_finite() {
                score.clamp(0.0, 1.0)
            } else {
                0.0
            };
            state.stats.feedback_sum += score;
            state.stats.feedback_count += 1;
            if let Some(c) = category {
                let s = state.category_stats.entry(c.to_owned()).or_default();
                bump(s);
                s.feedback_sum += score;
                s.feedback_count += 1;
            }
        }
        TrustEvent::Tick => {}
    }
}

/// The invariant, enforced once for every strategy: a level that was not
/// elevated before the event is not elevated after it. A strategy that
/// tried is turned into a request for a person.
fn guard(before: &TrustState, after: &mut TrustState, step: &mut Step) {
    if after.level == TrustLevel::Elevated && before.level != TrustLevel::Elevated {
        after.level = before.level;
        step.ask.get_or_insert(Promotion {
            category: None,
            from: before.level,
            to: TrustLevel::Elevated,
            reason: "promotion to elevated".into(),
        });
    }
    for (category, level) in after.categories.iter_mut() {
        let was = before.categories.get(category).copied();
        if *level == TrustLevel::Elevated && was != Some(TrustLevel::Elevated) {
            let from = was.unwrap_or(TrustLevel::Standard);
            *level = from;
            step.ask.get_or_insert(Promotion {
                category: Some(category.clone()),
                from,
                to: TrustLevel::Elevated,
                reason: "promotion to elevated".into(),
            });
        }
    }
    step.changed.retain(|c| c.to != TrustLevel::Elevated);
}

/// Applies the promotion waiting for a person. Call it only when a person
/// approved it (`warden trust approve`); returns what was applied.
pub fn approve_promotion(state: &mut TrustState) -> Option<Promotion> {
    let promotion = state.awaiting_person.take()?;
    match &promotion.category {
        Some(c) => {
            state.categories.insert(c.clone(), promotion.to);
        }
        None => {
            state.level = promotion.to;
            state.at_level = Tally::default();
        }
    }
    Some(promotion)
}

#[cfg(test)]
mod tests;
