//! Progressive trust, kept by the gate: call outcomes and people's
//! ratings feed the configured strategy (`warden_policy::trust`), and the
//! levels it gives each agent drive the gate's category gate.
//!
//! Attack: an agent gaming its way to more access, or a level change that
//! leaves no trace. Every level change and every promotion that waits for
//! a person is written to the store, with its audit record, before it
//! applies; a promotion to elevated applies only through
//! [`TrustKeeper::approve`], which a person calls. States live in memory
//! (no database read per call); counters that moved without changing a
//! level are written at the next [`TrustKeeper::tick`] or
//! [`TrustKeeper::flush`] (a killed host loses at most those counts, never
//! a level change). Time is the gate's clock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use warden_api::{Attribution, AuditEvent, JournalError, TrustAdmin, TrustError};
use warden_policy::TrustLevels;
use warden_policy::trust::{
    Promotion, Step, TrustConfig, TrustEvent, TrustState, approve_promotion,
};

use crate::Clock;

/// The difficulty of a call whose caller says none (the middle of 0..=1).
pub const DEFAULT_DIFFICULTY: f64 = 0.5;

/// Where trust states are kept between runs.
pub trait TrustStore: Send + Sync {
    /// `agent`'s stored state, if any.
    fn load(&self, agent: &str) -> Result<Option<TrustState>, JournalError>;
    /// Stores `state` and appends `events` to the audit log, in one
    /// transaction.
    fn save(
        &self,
        agent: &str,
        state: &TrustState,
        events: &[AuditEvent],
    ) -> Result<(), JournalError>;
}

struct Kept {
    state: TrustState,
    /// Counters moved since the last save.
    dirty: bool,
}

/// The trust states of the agents of one host.
pub struct TrustKeeper {
    config: TrustConfig,
    store: Arc<dyn TrustStore>,
    clock: Arc<dyn Clock>,
    states: Mutex<BTreeMap<String, Kept>>,
}

impl std::fmt::Debug for TrustKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustKeeper")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What a change did to an agent: its new levels, to apply to its policy.
pub(crate) type Levels = Option<TrustLevels>;

impl TrustKeeper {
    /// A keeper for `config`, loading the stored state of each of `agents`
    /// (a fresh one for an agent never seen).
    pub fn load(
        config: TrustConfig,
        store: Arc<dyn TrustStore>,
        clock: Arc<dyn Clock>,
        agents: &[String],
    ) -> Result<TrustKeeper, JournalError> {
        let keeper = TrustKeeper {
            config,
            store,
            clock,
            states: Mutex::new(BTreeMap::new()),
        };
        {
            let mut states = keeper.states();
            for agent in agents {
                keeper.kept(&mut states, agent)?;
            }
        }
        Ok(keeper)
    }

    pub fn config(&self) -> &TrustConfig {
        &self.config
    }

    fn enabled(&self) -> bool {
        !matches!(self.config, TrustConfig::Disabled)
    }

    fn states(&self) -> MutexGuard<'_, BTreeMap<String, Kept>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `agent`'s kept state, loaded from the store the first time.
    fn kept<'m>(
        &self,
        states: &'m mut BTreeMap<String, Kept>,
        agent: &str,
    ) -> Result<&'m mut Kept, JournalError> {
        if !states.contains_key(agent) {
            let state = match self.store.load(agent)? {
                Some(state) => state,
                None => self.config.initial_state(self.clock.now_ms()),
            };
            states.insert(
                agent.to_owned(),
                Kept {
                    state,
                    dirty: false,
                },
            );
        }
        states
            .get_mut(agent)
            .ok_or_else(|| JournalError::new("a trust state vanished while held"))
    }

    /// The levels trust gives `agent` now (`None`: trust is disabled).
    pub fn levels(&self, agent: &str) -> Result<Levels, JournalError> {
        if !self.enabled() {
            return Ok(None);
        }
        let mut states = self.states();
        let kept = self.kept(&mut states, agent)?;
        Ok(self.config.levels(&kept.state))
    }

    /// Applies `event` to `agent`'s state. A step that changed a level or
    /// asks for a person is written now, with its audit records; other
    /// changes wait for the next tick or flush. Returns the new levels
    /// when they changed.
    fn apply(&self, agent: &str, event: TrustEvent<'_>) -> Result<Option<Levels>, JournalError> {
        let now = self.clock.now_ms();
        let mut states = self.states();
        let kept = self.kept(&mut states, agent)?;
        let mut next = kept.state.clone();
        let step = self.config.apply(&mut next, event, now);
        let before = self.config.levels(&kept.state);
        let after = self.config.levels(&next);
        if step.changed.is_empty() && step.ask.is_none() {
            if next != kept.state {
                kept.state = next;
                kept.dirty = true;
            }
        } else {
            self.store.save(agent, &next, &step_events(agent, &step))?;
            kept.state = next;
            kept.dirty = false;
        }
        Ok((before != after).then_some(after))
    }

    /// A call of `agent` in `category` ended (`ok` or not); `difficulty`
    /// in 0..=1. Returns the new levels when they changed.
    pub(crate) fn outcome(
        &self,
        agent: &str,
        category: &str,
        ok: bool,
        difficulty: f64,
    ) -> Result<Option<Levels>, JournalError> {
        if !self.enabled() {
            return Ok(None);
        }
        let event = TrustEvent::Outcome {
            category,
            ok,
            difficulty,
        };
        self.apply(agent, event)
    }

    /// Time passed: re-verification and decay for every agent kept, and
    /// the counters moved since the last save written. Returns the agents
    /// whose levels changed, with their new levels.
    pub fn tick(&self) -> Vec<(String, Levels)> {
        if !self.enabled() {
            return Vec::new();
        }
        let agents: Vec<String> = self.states().keys().cloned().collect();
        let mut changed = Vec::new();
        for agent in agents {
            match self.apply(&agent, TrustEvent::Tick) {
                Ok(Some(levels)) => changed.push((agent, levels)),
                Ok(_) => {}
                Err(e) => tracing::error!(%agent, error = %e, "a trust tick was not recorded"),
            }
        }
        if let Err(e) = self.flush() {
            tracing::error!(error = %e, "trust counters were not written");
        }
        changed
    }

    /// Writes every state whose counters moved since its last save.
    pub fn flush(&self) -> Result<(), JournalError> {
        let mut states = self.states();
        for (agent, kept) in states.iter_mut().filter(|(_, k)| k.dirty) {
            self.store.save(agent, &kept.state, &[])?;
            kept.dirty = false;
        }
        Ok(())
    }

    /// A person rated `agent`'s work. Returns the state and, when they
    /// changed, the new levels.
    pub(crate) fn rate(
        &self,
        agent: &str,
        category: Option<&str>,
        score: f64,
    ) -> Result<(TrustState, Option<Levels>), TrustError> {
        if !self.enabled() {
            return Err(TrustError::Disabled);
        }
        if !(0.0..=1.0).contains(&score) {
            return Err(TrustError::InvalidScore(score));
        }
        let event = TrustEvent::Feedback { category, score };
        let levels = self.apply(agent, event).map_err(TrustError::NotRecorded)?;
        Ok((self.state(agent)?, levels))
    }

    /// A person (`by`) approved the promotion waiting for one.
    pub(crate) fn promote(
        &self,
        agent: &str,
        by: Attribution,
    ) -> Result<(TrustState, Option<Levels>), TrustError> {
        if !self.enabled() {
            return Err(TrustError::Disabled);
        }
        let mut states = self.states();
        let kept = self
            .kept(&mut states, agent)
            .map_err(TrustError::NotRecorded)?;
        let mut next = kept.state.clone();
        let Some(promotion) = approve_promotion(&mut next) else {
            return Err(TrustError::NothingWaiting(agent.to_owned()));
        };
        let event = approved_event(agent, &promotion, by);
        self.store
            .save(agent, &next, &[event])
            .map_err(TrustError::NotRecorded)?;
        let before = self.config.levels(&kept.state);
        kept.state = next;
        kept.dirty = false;
        let after = self.config.levels(&kept.state);
        Ok((kept.state.clone(), (before != after).then_some(after)))
    }

    fn state(&self, agent: &str) -> Result<TrustState, TrustError> {
        if !self.enabled() {
            return Err(TrustError::Disabled);
        }
        let mut states = self.states();
        self.kept(&mut states, agent)
            .map(|k| k.state.clone())
            .map_err(TrustError::NotRecorded)
    }
}

/// A trust state as the admin API shows it.
pub(crate) fn json(state: &TrustState) -> Result<serde_json::Value, TrustError> {
    serde_json::to_value(state)
        .map_err(|e| TrustError::NotRecorded(JournalError::with_source("encoding trust", e)))
}

/// Without a gate (`warden trust` while no server runs): the same
/// operations, on the store directly.
impl TrustAdmin for TrustKeeper {
    fn show(&self, agent: &str) -> Result<serde_json::Value, TrustError> {
        json(&self.state(agent)?)
    }

    fn feedback(
        &self,
        agent: &str,
        category: Option<&str>,
        score: f64,
    ) -> Result<serde_json::Value, TrustError> {
        json(&self.rate(agent, category, score)?.0)
    }

    fn approve(&self, agent: &str, by: Attribution) -> Result<serde_json::Value, TrustError> {
        json(&self.promote(agent, by)?.0)
    }
}

fn event(agent: &str, p: &Promotion, applied: bool) -> AuditEvent {
    let scope = p
        .category
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    AuditEvent::Trust {
        agent: agent.to_owned(),
        from: p.from.name().to_owned(),
        to: if applied {
            p.to.name().to_owned()
        } else {
            format!("{} (awaiting a person)", p.to.name())
        },
        reason: format!("{}{scope}", p.reason),
        by: None,
    }
}

/// The audit records of `step`: each level change, and a promotion that
/// waits for a person.
fn step_events(agent: &str, step: &Step) -> Vec<AuditEvent> {
    let mut events: Vec<AuditEvent> = step.changed.iter().map(|p| event(agent, p, true)).collect();
    events.extend(step.ask.iter().map(|p| event(agent, p, false)));
    events
}

fn approved_event(agent: &str, p: &Promotion, by: Attribution) -> AuditEvent {
    let mut e = event(agent, p, true);
    if let AuditEvent::Trust {
        reason, by: who, ..
    } = &mut e
    {
        reason.push_str("; approved by a person");
        *who = Some(by);
    }
    e
}
