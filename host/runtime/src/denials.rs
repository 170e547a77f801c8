//! The reasons behind a call's network refusals, kept for the guest.
//!
//! A WASI error code cannot carry text, so the checks record why they
//! refused here and the guest reads it through `host.denials`. Shared by
//! the socket check (which runs outside the store) and the HTTP hook.

use std::sync::{Arc, Mutex, PoisonError};

/// Most reasons kept per call: a guest retrying in a loop cannot grow it.
const MAX_DENIALS: usize = 32;

#[derive(Debug, Clone, Default)]
pub(crate) struct Denials(Arc<Mutex<Vec<String>>>);

impl Denials {
    pub fn record(&self, reason: impl Into<String>) {
        let reason = reason.into();
        tracing::info!(target: "warden::net", %reason, "network access refused");
        let mut list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if list.len() < MAX_DENIALS {
            list.push(reason);
        }
    }

    pub fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
