//! The four strategies' rules. Each may propose any level; the caller's
//! guard stops elevated (see `mod.rs`).

use super::{
    Criteria, DAY_MS, MilestoneConfig, PerCategoryConfig, Promotion, Step, Tally, TrustEvent,
    TrustLevel, TrustState, TrustStats, WeightedConfig,
};

fn change(category: Option<&str>, from: TrustLevel, to: TrustLevel, reason: String) -> Promotion {
    Promotion {
        category: category.map(str::to_owned),
        from,
        to,
        reason,
    }
}

/// One step up, applied or (elevated, or a person required) asked.
fn step_up(
    step: &mut Step,
    level: &mut TrustLevel,
    category: Option<&str>,
    needs_person: bool,
    reason: String,
) {
    let to = level.up();
    if to == *level {
        return;
    }
    let p = change(category, *level, to, reason);
    if to == TrustLevel::Elevated || needs_person {
        step.ask = Some(p);
    } else {
        *level = to;
        step.changed.push(p);
    }
}

fn step_down(step: &mut Step, level: &mut TrustLevel, category: Option<&str>, reason: String) {
    let to = level.down();
    if to != *level {
        step.changed.push(change(category, *level, to, reason));
        *level = to;
    }
}

pub(super) fn score(w: &WeightedConfig, s: &TrustStats) -> f64 {
    let calls = (s.ok + s.failed) as f64;
    let completion = if calls == 0.0 {
        0.0
    } else {
        s.ok as f64 / calls
    };
    let difficulty = if s.ok == 0 {
        0.0
    } else {
        s.difficulty_sum / s.ok as f64
    };
    let no_errors = if calls == 0.0 {
        0.0
    } else {
        1.0 - s.error_rate()
    };
    w.weights.task_difficulty * difficulty
        + w.weights.completion_rate * completion
        + w.weights.error_rate * no_errors
        + w.weights.human_feedback * s.quality()
}

pub(super) fn weighted(w: &WeightedConfig, state: &mut TrustState) -> Step {
    let mut step = Step::default();
    let score = score(w, &state.stats);
    let threshold = |level: TrustLevel| match level {
        TrustLevel::Sandboxed => w.sandboxed_to_restricted,
        TrustLevel::Restricted => w.restricted_to_standard,
        TrustLevel::Standard | TrustLevel::Elevated => w.standard_to_elevated,
    };
    // Keeping a level needs the score that earned it.
    if state.level > w.initial_level && score < threshold(state.level.down()) {
        step_down(
            &mut step,
            &mut state.level,
            None,
            format!("score {score:.2} fell below the level's threshold"),
        );
        return step;
    }
    if state.level != TrustLevel::Elevated && score >= threshold(state.level) {
        let reason = format!("score {score:.2} reached {:.2}", threshold(state.level));
        step_up(&mut step, &mut state.level, None, false, reason);
    }
    step
}

pub(super) fn per_category(
    p: &PerCategoryConfig,
    state: &mut TrustState,
    event: TrustEvent<'_>,
    now_ms: u64,
) -> Step {
    let mut step = Step::default();
    let category = match event {
        TrustEvent::Outcome { category, .. } => category,
        TrustEvent::Feedback {
            category: Some(c), ..
        } => c,
        _ => return step,
    };
    let Some(criteria) = p.promotion.get(category) else {
        return step;
    };
    let stats = state
        .category_stats
        .get(category)
        .cloned()
        .unwrap_or_default();
    let level = state
        .categories
        .entry(category.to_owned())
        .or_insert(p.default_level);
    if *level != TrustLevel::Elevated && stats.meets(criteria, now_ms) {
        let reason = format!(
            "{category}: {} tasks completed, quality {:.2}",
            stats.ok,
            stats.quality()
        );
        step_up(
            &mut step,
            level,
            Some(category),
            criteria.requires_human_approval,
            reason,
        );
    }
    step
}

fn milestone_criteria(m: &MilestoneConfig, from: TrustLevel) -> Option<&Criteria> {
    match from {
        TrustLevel::Sandboxed => Some(&m.sandboxed_to_restricted),
        TrustLevel::Restricted => Some(&m.restricted_to_standard),
        TrustLevel::Standard => Some(&m.standard_to_elevated),
        TrustLevel::Elevated => None,
    }
}

/// Whether `tally` holds enough calls to judge (ten) and fails more of
/// them than `limit` allows.
fn over_limit(tally: Tally, limit: f64) -> bool {
    const JUDGED_AFTER: u64 = 10;
    tally.calls() >= JUDGED_AFTER && tally.error_rate() > limit
}

/// `active_before`: the agent's last activity before the event applied.
pub(super) fn milestone(
    m: &MilestoneConfig,
    state: &mut TrustState,
    now_ms: u64,
    active_before: u64,
) -> Step {
    let mut step = Step::default();
    let rv = &m.re_verification;
    let s = state.stats.clone();
    if rv.enabled && state.level > TrustLevel::Sandboxed {
        let idle_days = now_ms.saturating_sub(active_before) / DAY_MS;
        if rv.decay_on_idle_days > 0 && idle_days >= rv.decay_on_idle_days {
            step_down(
                &mut step,
                &mut state.level,
                None,
                format!("idle for {idle_days} days"),
            );
            state.stats.last_active_ms = now_ms;
            return step;
        }
        let tally = state.at_level;
        if over_limit(tally, rv.decay_on_error_rate) {
            step_down(
                &mut step,
                &mut state.level,
                None,
                format!(
                    "error rate {:.2} over {} calls at this level",
                    tally.error_rate(),
                    tally.calls()
                ),
            );
            return step;
        }
        let due = rv.interval_days > 0
            && now_ms.saturating_sub(state.last_verified_ms) / DAY_MS >= rv.interval_days;
        if due {
            state.last_verified_ms = now_ms;
            let earned = milestone_criteria(m, state.level.down());
            if earned.is_some_and(|c| !s.meets(c, now_ms)) {
                step_down(
                    &mut step,
                    &mut state.level,
                    None,
                    "re-verification failed".into(),
                );
                return step;
            }
        }
    }
    // A record over the error-rate limit earns no promotion: the decay
    // judges only the calls at the current level, so without this an
    // agent failing on would be promoted back after each demotion.
    let failing = rv.enabled && over_limit(s.tally(), rv.decay_on_error_rate);
    if let Some(c) = milestone_criteria(m, state.level)
        && !failing
        && s.meets(c, now_ms)
    {
        let reason = format!("milestone met: {} tasks, quality {:.2}", s.ok, s.quality());
        step_up(
            &mut step,
            &mut state.level,
            None,
            c.requires_human_approval,
            reason,
        );
    }
    step
}
