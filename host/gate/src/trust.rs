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
//! a level change). Time is the gate's clock. Each agent's state has a
//! lock of its own, held across that agent's store reads and writes: a
//! store slow for one agent (a replica's lock, a database round trip)
//! never holds up another agent's decisions.
//!
//! Attack: an agent that fails on one replica and acts on another, which
//! still holds its earlier, higher level. When other hosts share the
//! store ([`TrustStore::shared`]), every change is written at once, the
//! state is read again before each decision ([`TrustKeeper::refresh`]),
//! and a write made from a state another host moved meanwhile is refused
//! by the store and made again from the stored one: one state per agent,
//! no update lost.

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
    /// `agent`'s stored state, if any, with the form it is stored in.
    fn load(&self, agent: &str) -> Result<Option<Stored>, JournalError>;
    /// Stores `state` and appends `events` to the audit log, in one
    /// transaction, when the stored form is still `prior` (`None`: none
    /// stored). Returns the form stored, or `None`: another process
    /// changed it, and nothing was written.
    fn save(
        &self,
        agent: &str,
        prior: Option<&serde_json::Value>,
        state: &TrustState,
        events: &[AuditEvent],
    ) -> Result<Option<serde_json::Value>, JournalError>;
    /// Whether other running hosts change these states too (replicas on
    /// one database).
    fn shared(&self) -> bool {
        false
    }
}

/// How many times a change is made again from the stored state, when
/// other hosts keep moving it, before it fails.
const ATTEMPTS: usize = 16;

/// A state as the store holds it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub state: TrustState,
    /// The form it is stored in, which a write from it must find there
    /// still (compared as stored: an older build's form is not rewritten
    /// into this build's before the comparison).
    pub form: serde_json::Value,
}

struct Kept {
    state: TrustState,
    /// The stored form as this keeper last read or wrote it (`None`:
    /// none stored).
    stored: Option<serde_json::Value>,
    /// Counters moved since then, not yet written.
    dirty: bool,
}

/// One agent's place in the keeper: its kept state once loaded. Each
/// agent has its own lock, held across that agent's store reads and
/// writes, so a slow write for one agent never holds up another's
/// decisions.
type Slot = Arc<Mutex<Option<Kept>>>;

/// The trust states of the agents of one host.
pub struct TrustKeeper {
    config: TrustConfig,
    store: Arc<dyn TrustStore>,
    clock: Arc<dyn Clock>,
    /// Held only to find or add a slot, never across the store.
    states: Mutex<BTreeMap<String, Slot>>,
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
        for agent in agents {
            let slot = keeper.slot(agent);
            keeper.kept(&mut lock(&slot), agent)?;
        }
        Ok(keeper)
    }

    pub fn config(&self) -> &TrustConfig {
        &self.config
    }

    fn enabled(&self) -> bool {
        !matches!(self.config, TrustConfig::Disabled)
    }

    /// `agent`'s slot, made empty the first time it is asked for.
    fn slot(&self, agent: &str) -> Slot {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        states.entry(agent.to_owned()).or_default().clone()
    }

    /// Every slot with its agent, as they are now.
    fn slots(&self) -> Vec<(String, Slot)> {
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        states.iter().map(|(a, s)| (a.clone(), s.clone())).collect()
    }

    /// `agent`'s kept state, loaded from the store the first time. A
    /// change made from it is a compare-and-set, so a kept state another
    /// host moved since costs a retry, never a lost update.
    fn kept<'m>(
        &self,
        slot: &'m mut Option<Kept>,
        agent: &str,
    ) -> Result<&'m mut Kept, JournalError> {
        if slot.is_none() {
            self.reload(slot, agent)?;
        }
        slot.as_mut()
            .ok_or_else(|| JournalError::new("a trust state vanished while held"))
    }

    /// [`TrustKeeper::kept`], read from the store again first when other
    /// hosts share it: for what is shown or decided from the state.
    fn fresh<'m>(
        &self,
        slot: &'m mut Option<Kept>,
        agent: &str,
    ) -> Result<&'m mut Kept, JournalError> {
        if self.store.shared() {
            self.reload(slot, agent)?;
        }
        self.kept(slot, agent)
    }

    /// Reads `agent`'s state from the store, in place of the kept one.
    fn reload(&self, slot: &mut Option<Kept>, agent: &str) -> Result<(), JournalError> {
        let kept = match self.store.load(agent)? {
            Some(Stored { state, form }) => Kept {
                state,
                stored: Some(form),
                dirty: false,
            },
            None => Kept {
                state: self.config.initial_state(self.clock.now_ms()),
                stored: None,
                dirty: false,
            },
        };
        *slot = Some(kept);
        Ok(())
    }

    /// The levels trust gives `agent` now (`None`: trust is disabled).
    pub fn levels(&self, agent: &str) -> Result<Levels, JournalError> {
        if !self.enabled() {
            return Ok(None);
        }
        let slot = self.slot(agent);
        let mut slot = lock(&slot);
        let kept = self.fresh(&mut slot, agent)?;
        Ok(self.config.levels(&kept.state))
    }

    /// Before a decision: when other hosts share the store, `agent`'s
    /// state as stored now, and its levels when they moved since this
    /// keeper last saw them (`None`: they did not, or nothing is shared).
    pub fn refresh(&self, agent: &str) -> Result<Option<Levels>, JournalError> {
        if !self.enabled() || !self.store.shared() {
            return Ok(None);
        }
        let slot = self.slot(agent);
        let mut slot = lock(&slot);
        let before = slot.as_ref().map(|k| self.config.levels(&k.state));
        let kept = self.fresh(&mut slot, agent)?;
        let now = self.config.levels(&kept.state);
        Ok((before != Some(now.clone())).then_some(now))
    }

    /// Applies `event` to `agent`'s state. A step that changed a level or
    /// asks for a person is written now, with its audit records; other
    /// changes wait for the next tick or flush (or are written now too,
    /// when the store is shared). It starts from the kept state (which a
    /// decision on a shared store has just read again): a write refused
    /// because another host moved the state is made again from the stored
    /// one. Returns the new levels when they changed.
    fn apply(&self, agent: &str, event: TrustEvent<'_>) -> Result<Option<Levels>, JournalError> {
        let now = self.clock.now_ms();
        let slot = self.slot(agent);
        let mut slot = lock(&slot);
        for _ in 0..ATTEMPTS {
            let kept = self.kept(&mut slot, agent)?;
            let mut next = kept.state.clone();
            let step = self.config.apply(&mut next, event, now);
            let before = self.config.levels(&kept.state);
            let after = self.config.levels(&next);
            let changed = (before != after).then_some(after);
            let audited = !step.changed.is_empty() || step.ask.is_some();
            if !audited && (next == kept.state || !self.store.shared()) {
                if next != kept.state {
                    kept.state = next;
                    kept.dirty = true;
                }
                return Ok(changed);
            }
            let events = step_events(agent, &step);
            if let Some(form) = self
                .store
                .save(agent, kept.stored.as_ref(), &next, &events)?
            {
                *kept = Kept {
                    state: next,
                    stored: Some(form),
                    dirty: false,
                };
                return Ok(changed);
            }
            // Another host moved it: start again from what it stored.
            self.reload(&mut slot, agent)?;
        }
        Err(moving(agent))
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
        let mut changed = Vec::new();
        for (agent, _) in self.slots() {
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

    /// Writes every state whose counters moved since its last save. A
    /// state another process moved meanwhile is read again: those
    /// counters are lost, never its change.
    pub fn flush(&self) -> Result<(), JournalError> {
        for (agent, slot) in self.slots() {
            let mut slot = lock(&slot);
            let Some(kept) = slot.as_mut().filter(|k| k.dirty) else {
                continue;
            };
            match self
                .store
                .save(&agent, kept.stored.as_ref(), &kept.state, &[])?
            {
                Some(form) => {
                    kept.stored = Some(form);
                    kept.dirty = false;
                }
                None => {
                    tracing::warn!(%agent, "trust was changed by another process; its counters since the last save are dropped");
                    self.reload(&mut slot, &agent)?;
                }
            }
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
        let slot = self.slot(agent);
        let mut slot = lock(&slot);
        for _ in 0..ATTEMPTS {
            let kept = self
                .fresh(&mut slot, agent)
                .map_err(TrustError::NotRecorded)?;
            let mut next = kept.state.clone();
            let Some(promotion) = approve_promotion(&mut next) else {
                return Err(TrustError::NothingWaiting(agent.to_owned()));
            };
            let event = approved_event(agent, &promotion, by.clone());
            if let Some(form) = self
                .store
                .save(agent, kept.stored.as_ref(), &next, &[event])
                .map_err(TrustError::NotRecorded)?
            {
                let before = self.config.levels(&kept.state);
                let after = self.config.levels(&next);
                *kept = Kept {
                    state: next.clone(),
                    stored: Some(form),
                    dirty: false,
                };
                return Ok((next, (before != after).then_some(after)));
            }
            self.reload(&mut slot, agent)
                .map_err(TrustError::NotRecorded)?;
        }
        Err(TrustError::NotRecorded(moving(agent)))
    }

    fn state(&self, agent: &str) -> Result<TrustState, TrustError> {
        if !self.enabled() {
            return Err(TrustError::Disabled);
        }
        let slot = self.slot(agent);
        let mut slot = lock(&slot);
        self.fresh(&mut slot, agent)
            .map(|k| k.state.clone())
            .map_err(TrustError::NotRecorded)
    }
}

fn lock(slot: &Slot) -> MutexGuard<'_, Option<Kept>> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A change that other hosts kept overtaking.
fn moving(agent: &str) -> JournalError {
    JournalError::new(format!(
        "the trust of `{agent}` kept changing in the store while this host wrote it \
         ({ATTEMPTS} attempts); try again"
    ))
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

#[cfg(test)]
mod tests;
