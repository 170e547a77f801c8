//! The store behind the gate's durable hooks: capability grants (the set
//! in force, reloaded when the database changed, and new grants) and
//! progressive trust states; and behind the HTTP server's sessions.

use std::sync::{Arc, Mutex, PoisonError};

use warden_api::{AuditEvent, JournalError, SessionStates};
use warden_gate::{Clock, GrantStore, Stored, TrustStore};
use warden_policy::trust::TrustState;
use warden_policy::{CapabilityGrant, GrantSet};
use warden_store::Store;

/// What `Store::grants_version` returns.
type GrantsVersion = u64;

/// Grants from the store, reloaded when the database changed (a grant
/// issued or revoked by this process or by `warden grants`).
pub struct StoreGrants {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    cache: Mutex<(Option<GrantsVersion>, Arc<GrantSet>)>,
}

impl std::fmt::Debug for StoreGrants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreGrants").finish_non_exhaustive()
    }
}

impl StoreGrants {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> StoreGrants {
        StoreGrants {
            store,
            clock,
            cache: Mutex::new((None, Arc::new(GrantSet::default()))),
        }
    }
}

impl GrantStore for StoreGrants {
    fn current(&self) -> Arc<GrantSet> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let version = self.store.grants_version().ok();
        if version.is_none() || version != cache.0 {
            match self.store.live_grants(self.clock.now_ms()) {
                Ok(grants) => *cache = (version, Arc::new(GrantSet::new(grants))),
                Err(e) => {
                    // Fail closed: no grants rather than stale ones.
                    tracing::error!(error = %e, "reading grants failed");
                    *cache = (None, Arc::new(GrantSet::default()));
                }
            }
        }
        cache.1.clone()
    }

    fn issue(&self, grant: CapabilityGrant) -> Result<CapabilityGrant, JournalError> {
        self.store
            .issue_grant(grant, None)
            .map_err(|e| JournalError::with_source("recording a capability grant", e))
    }
}

/// Trust states in the store, with their audit records.
#[derive(Debug)]
pub struct StoreTrust(pub Arc<dyn Store>);

impl TrustStore for StoreTrust {
    fn load(&self, agent: &str) -> Result<Option<Stored>, JournalError> {
        let Some(stored) = self
            .0
            .trust(agent)
            .map_err(|e| JournalError::with_source("reading trust", e))?
        else {
            return Ok(None);
        };
        let state = serde_json::from_value(stored.state.clone())
            .map_err(|e| JournalError::with_source(format!("the stored trust of `{agent}`"), e))?;
        Ok(Some(Stored {
            state,
            form: stored.state,
        }))
    }

    fn save(
        &self,
        agent: &str,
        prior: Option<&serde_json::Value>,
        state: &TrustState,
        events: &[AuditEvent],
    ) -> Result<Option<serde_json::Value>, JournalError> {
        let value = serde_json::to_value(state)
            .map_err(|e| JournalError::with_source("encoding trust", e))?;
        let written = self
            .0
            .put_trust(agent, prior, &value, events)
            .map_err(|e| JournalError::with_source("recording trust", e))?;
        Ok(written.then_some(value))
    }

    fn shared(&self) -> bool {
        self.0.shared()
    }
}

/// How long an HTTP session of a client before 2026-07-28 can be taken
/// over after its `initialize` (by another replica, or after a restart);
/// a client whose session is gone initializes again.
pub const SESSION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// MCP sessions in the store, each kept for [`SESSION_LIFETIME`].
#[derive(Debug)]
pub struct StoreSessions(pub Arc<dyn Store>);

impl SessionStates for StoreSessions {
    fn load(&self, id: &str) -> Result<Option<serde_json::Value>, JournalError> {
        self.0
            .session(id)
            .map_err(|e| JournalError::with_source("reading a session", e))
    }

    fn store(&self, id: &str, state: &serde_json::Value) -> Result<(), JournalError> {
        let lifetime = u64::try_from(SESSION_LIFETIME.as_millis()).unwrap_or(u64::MAX);
        self.0
            .put_session(id, state, warden_store::now_ms().saturating_add(lifetime))
            .map_err(|e| JournalError::with_source("keeping a session", e))
    }

    fn remove(&self, id: &str) -> Result<(), JournalError> {
        self.0
            .drop_session(id)
            .map_err(|e| JournalError::with_source("ending a session", e))
    }
}
