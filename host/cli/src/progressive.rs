//! Progressive trust for `warden serve` and `warden trust`: call outcomes
//! and people's feedback feed the configured strategy
//! (`warden_policy::trust`), the state lives in the store, every level
//! change is audited with it, and the gate's category gate follows the
//! levels. A promotion to elevated waits for `warden trust approve`.

use std::sync::{Arc, OnceLock};

use warden_api::{Attribution, AuditEvent, Journal, JournalError};
use warden_gate::Gate;
use warden_policy::trust::{Promotion, Step, TrustConfig, TrustEvent, TrustState};
use warden_store::{Store, now_ms};

/// Until tasks carry a difficulty, every call counts as middling.
const DEFAULT_DIFFICULTY: f64 = 0.5;

/// An agent's stored trust, or a fresh one.
pub fn load(store: &Store, config: &TrustConfig, agent: &str) -> anyhow::Result<TrustState> {
    Ok(match store.trust(agent)? {
        Some(stored) => serde_json::from_value(stored.state)?,
        None => config.initial_state(now_ms()),
    })
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

/// Stores `state` with the audit records of `step`.
pub fn save(store: &Store, agent: &str, state: &TrustState, step: &Step) -> anyhow::Result<()> {
    let mut events: Vec<AuditEvent> = step.changed.iter().map(|p| event(agent, p, true)).collect();
    events.extend(step.ask.iter().map(|p| event(agent, p, false)));
    store.put_trust(agent, &serde_json::to_value(state)?, &events)?;
    Ok(())
}

/// A person (`by`) approved the waiting promotion.
pub fn approved(
    store: &Store,
    agent: &str,
    state: &TrustState,
    p: &Promotion,
    by: Attribution,
) -> anyhow::Result<()> {
    let mut e = event(agent, p, true);
    if let AuditEvent::Trust {
        reason, by: who, ..
    } = &mut e
    {
        reason.push_str("; approved by a person");
        *who = Some(by);
    }
    store.put_trust(agent, &serde_json::to_value(state)?, &[e])?;
    Ok(())
}

/// The store's journal, learning trust from call outcomes on the way.
pub struct TrustingJournal {
    store: Arc<Store>,
    config: TrustConfig,
    gate: OnceLock<Gate>,
}

impl TrustingJournal {
    pub fn new(store: Arc<Store>, config: TrustConfig) -> TrustingJournal {
        TrustingJournal {
            store,
            config,
            gate: OnceLock::new(),
        }
    }

    /// Connects the gate whose levels follow trust, and applies every
    /// listed agent's stored levels.
    pub fn attach(&self, gate: Gate, agents: &[String]) -> anyhow::Result<()> {
        if matches!(self.config, TrustConfig::Disabled) {
            return Ok(());
        }
        for agent in agents {
            let state = load(&self.store, &self.config, agent)?;
            let _ = gate.set_trust(agent, self.config.levels(&state));
        }
        let _ = self.gate.set(gate);
        Ok(())
    }

    fn learn(&self, agent: &str, tool: &str, ok: bool) -> anyhow::Result<()> {
        let Some(gate) = self.gate.get() else {
            return Ok(());
        };
        let Some(category) = gate.spec(tool).map(|s| s.category.as_str().to_owned()) else {
            return Ok(());
        };
        let mut state = load(&self.store, &self.config, agent)?;
        let step = self.config.apply(
            &mut state,
            TrustEvent::Outcome {
                category: &category,
                ok,
                difficulty: DEFAULT_DIFFICULTY,
            },
            now_ms(),
        );
        save(&self.store, agent, &state, &step)?;
        let _ = gate.set_trust(agent, self.config.levels(&state));
        Ok(())
    }
}

impl Journal for TrustingJournal {
    fn rule_added(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), JournalError> {
        self.store.rule_added(agent, rule, approval, by)
    }

    fn audit(&self, event: &AuditEvent) -> Result<(), JournalError> {
        Journal::audit(&*self.store, event)?;
        if let AuditEvent::Outcome {
            agent, tool, ok, ..
        } = event
            && !matches!(self.config, TrustConfig::Disabled)
            && let Err(e) = self.learn(agent, tool, *ok)
        {
            tracing::error!(%agent, error = %e, "trust was not updated");
        }
        Ok(())
    }

    fn audit_args(&self) -> bool {
        self.store.audit_args()
    }
}
