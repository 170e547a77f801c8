//! Rules people added by answering "always allow" through another replica
//! of a shared store: applied here while this host runs, within
//! [`RULES_EVERY`] of being added (rules only allow, and are only ever
//! added, so the delay can only make a call ask once more, never let one
//! run that should not).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use warden_gate::Gate;
use warden_store::Store;

/// How often a replica reads the rules other replicas added.
pub const RULES_EVERY: Duration = Duration::from_secs(1);

/// The rules of the store, applied to a gate as they are added.
pub(crate) struct SharedRules {
    store: Arc<dyn Store>,
    gate: Gate,
    /// The rules applied, by agent and rule (not by position: replicas
    /// commit their rules in another order than they number them). A
    /// rule this replica added itself is read back once and adds nothing
    /// (a policy holds each rule once).
    applied: Mutex<HashSet<(String, String)>>,
}

impl SharedRules {
    /// Applies every stored rule now.
    pub(crate) fn start(
        store: Arc<dyn Store>,
        gate: Gate,
    ) -> Result<SharedRules, warden_store::StoreError> {
        let rules = SharedRules {
            store,
            gate,
            applied: Mutex::new(HashSet::new()),
        };
        rules.apply_new()?;
        Ok(rules)
    }

    /// Applies the rules added since the last call.
    pub(crate) fn apply_new(&self) -> Result<(), warden_store::StoreError> {
        let rules = self.store.rules()?;
        let mut applied = self.applied.lock().unwrap_or_else(PoisonError::into_inner);
        for stored in rules {
            let key = (stored.agent, stored.rule);
            if applied.contains(&key) {
                continue;
            }
            if let Err(e) = self.gate.add_allow_rule(&key.0, &key.1) {
                tracing::warn!(agent = %key.0, rule = %key.1, error = %e, "a stored rule no longer applies");
            }
            applied.insert(key);
        }
        Ok(())
    }

    /// [`SharedRules::apply_new`] now and then, for a store other
    /// replicas share.
    pub(crate) fn tick(&self) {
        if let Err(e) = self.apply_new() {
            tracing::warn!(error = %e, "the rules other replicas added were not read; retrying");
        }
    }
}
