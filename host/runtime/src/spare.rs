//! One instance of a plugin made ahead, while a single-threaded host has
//! nothing else to do, so the next call skips instantiation (about a
//! tenth of a small call's time on the answer's path).
//!
//! Attack: a call inheriting anything from before it started — another
//! call's grants, files, memory or guest state, or limits it was not
//! given. A spare is instantiated from the component's initial image in a
//! store with no grants at all (no directories, environment, network or
//! call context), and is never run: no export of it is called before a
//! call adopts it. Adopting replaces the whole store data with the call's
//! own (its WASI context and resource table, limits, host interface,
//! denials), then arms the call's fuel and deadline. Each spare serves
//! exactly one call and is dropped with that call's store afterwards, so
//! calls stay as isolated as with a fresh instance each; the memory the
//! instantiation took counts against the call's limit, and a call whose
//! limit it exceeds instantiates afresh (and fails as it would have).
//!
//! Spares have room of their own in the instance pool ([`SPARES`], beside
//! the calls' `max_concurrent_calls`), so a spare never keeps a call from
//! its slot: a call first waits for its slot like any other, then takes
//! its plugin's spare if one waits. Past [`SPARES`] plugins with a spare,
//! calls of the others instantiate as before.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

use crate::bindings;
use crate::plugin::PluginInner;
use crate::state::HostState;

/// How many instances a runtime keeps made ahead at most (one per
/// plugin), waiting or in the call that took them.
pub(crate) const SPARES: u32 = 16;

/// An instantiated, never-run instance, in its store, holding its room
/// among the spares until the store is dropped.
pub(crate) struct Spare {
    pub store: Store<HostState>,
    pub instance: bindings::Plugin,
    pub room: OwnedSemaphorePermit,
}

/// Where a plugin's spare waits: at most one.
#[derive(Default)]
pub(crate) struct SpareSlot(Mutex<Option<Spare>>);

impl SpareSlot {
    pub fn take(&self) -> Option<Spare> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    pub fn is_ready(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Keeps `spare` unless one is already waiting (then it is dropped).
    fn put(&self, spare: Spare) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(spare);
        }
    }
}

/// Makes `plugin`'s spare, unless one is waiting or the spares' room is
/// full. Instantiation runs no export; a component that fails to
/// instantiate this way gets no spare, and its calls instantiate (and
/// fail) on their own as before.
pub(crate) async fn replenish(plugin: Arc<PluginInner>) {
    if plugin.spare.is_ready() {
        return;
    }
    let Ok(room) = Arc::clone(&plugin.runtime.shared.spares).try_acquire_owned() else {
        return;
    };
    let Ok(mut prepared) = crate::call_store::spare_store(&plugin) else {
        return;
    };
    let limit = warden_api::CallLimits::DEFAULT.deadline;
    let made = tokio::time::timeout(limit, plugin.pre.instantiate_async(&mut prepared)).await;
    match made {
        Ok(Ok(instance)) => plugin.spare.put(Spare {
            store: prepared,
            instance,
            room,
        }),
        Ok(Err(e)) => {
            tracing::debug!(plugin = %plugin.manifest.plugin.name, error = %format!("{e:#}"), "no spare instance");
        }
        Err(_) => {
            tracing::debug!(plugin = %plugin.manifest.plugin.name, "no spare instance: instantiation timed out");
        }
    }
}
