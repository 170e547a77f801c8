//! A call's `Store`: its data built from the call's grants alone (a WASI
//! context through [`crate::wasi`], its limits, a host interface), then
//! either a fresh store around it or a spare instance's store
//! ([`crate::spare`]) with that data in place of everything the spare was
//! made with.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;
use warden_api::{CallEvents, CallLimits, Grants};
use wasmtime::{Store, UpdateDeadline};

use crate::bindings;
use crate::denials::Denials;
use crate::host_api::HostApi;
use crate::http::{Egress, HttpCtx};
use crate::limits::{CallLimiter, DeadlineExceeded};
use crate::open_checks::OpenCheck;
use crate::output::CappedOutput;
use crate::plugin::PluginInner;
use crate::spare::Spare;
use crate::state::HostState;
use crate::wasi;

pub(crate) struct Prepared {
    pub store: Store<HostState>,
    /// The instance already made in `store`: a spare the call adopted.
    pub instance: Option<bindings::Plugin>,
    pub parts: CallParts,
    /// The adopted spare's room in the pool, released after the store.
    _room: Option<OwnedSemaphorePermit>,
}

/// What a call reads back from its store data after the guest ran.
pub(crate) struct CallParts {
    pub stdout: CappedOutput,
    pub stderr: CappedOutput,
    pub dirs: Vec<String>,
    pub cwd: Option<String>,
}

/// What a call brings besides its grants and limits.
#[derive(Default)]
pub(crate) struct CallSide {
    pub events: Option<Arc<dyn CallEvents>>,
    pub paths: Option<Arc<dyn warden_api::PathGuard>>,
    /// Where the decision resolved relative paths (see `BackendCall::cwd`).
    pub cwd: Option<String>,
}

/// A call's store data, built from its grants alone.
fn call_state(
    plugin: &PluginInner,
    tool: &str,
    request_id: &str,
    grants: &Grants,
    limits: &CallLimits,
    side: CallSide,
) -> Result<(HostState, CallParts), String> {
    let shared = &plugin.runtime.shared;
    let stdout = CappedOutput::new(limits.log_bytes);
    let stderr = CappedOutput::new(limits.log_bytes);
    let requested = &plugin.manifest.capabilities;
    let net = plugin.net.get(&grants.net, &requested.network);
    let denials = Denials::default();
    let call_wasi = wasi::build(
        grants,
        requested,
        &net,
        &denials,
        wasi::CallIo {
            stdout: &stdout,
            stderr: &stderr,
            fs_on_call_thread: shared.config.fs_on_call_thread,
            cwd: side.cwd.as_deref(),
        },
    )?;
    let egress = Egress::with_denials(net.clone(), shared.config.http, denials.clone());
    let memory = limits.memory_bytes.min(shared.config.max_memory_bytes);
    let state = HostState {
        wasi: call_wasi.ctx,
        http: HttpCtx::new(egress),
        table: wasmtime::component::ResourceTable::new(),
        limiter: CallLimiter::new(memory, Instant::now() + limits.deadline),
        host: HostApi::new(&plugin.manifest.plugin.name, tool, request_id, side.events),
        denials,
        net,
        open_check: side
            .paths
            .as_ref()
            .map(|guard| OpenCheck::new(guard.clone(), grants, requested)),
        paths: side.paths,
        fs_on_call_thread: shared.config.fs_on_call_thread,
    };
    let parts = CallParts {
        stdout,
        stderr,
        dirs: call_wasi.dirs,
        cwd: call_wasi.cwd,
    };
    Ok((state, parts))
}

/// A store around `state`, its memory limited and its deadline checked
/// on every epoch tick; not yet armed ([`arm`]).
fn new_store(plugin: &PluginInner, state: HostState) -> Store<HostState> {
    let mut store = Store::new(&plugin.runtime.shared.engine, state);
    store.limiter(|s| &mut s.limiter);
    store.epoch_deadline_callback(|ctx| {
        if Instant::now() >= ctx.data().limiter.deadline {
            Err(DeadlineExceeded.into())
        } else {
            // tokio's own yield: everything that became ready meanwhile
            // (the call's progress on its way out, other calls on a
            // single-threaded session) runs before the guest resumes.
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        }
    });
    store
}

/// Gives `store` the call's fuel and starts its deadline checks from now.
fn arm(
    plugin: &PluginInner,
    store: &mut Store<HostState>,
    limits: &CallLimits,
) -> Result<(), String> {
    if plugin.runtime.shared.config.fuel {
        store
            .set_fuel(limits.fuel.unwrap_or(u64::MAX))
            .map_err(|e| format!("setting the call's fuel: {e}"))?;
    }
    store.set_epoch_deadline(1);
    Ok(())
}

fn fresh(
    plugin: &PluginInner,
    state: HostState,
    parts: CallParts,
    limits: &CallLimits,
) -> Result<Prepared, String> {
    let mut store = new_store(plugin, state);
    arm(plugin, &mut store, limits)?;
    Ok(Prepared {
        store,
        instance: None,
        parts,
        _room: None,
    })
}

/// The call's store: `spare`'s (see [`crate::spare`]) with the call's
/// own data in place of everything the spare was made with, when one is
/// given and the memory its instantiation took fits the call's limit;
/// else a fresh one, with nothing instantiated in it yet.
pub(crate) fn prepare(
    plugin: &PluginInner,
    spare: Option<Spare>,
    tool: &str,
    request_id: &str,
    grants: &Grants,
    limits: &CallLimits,
    side: CallSide,
) -> Result<Prepared, String> {
    let (mut state, parts) = call_state(plugin, tool, request_id, grants, limits, side)?;
    let Some(Spare {
        mut store,
        instance,
        room,
    }) = spare
    else {
        return fresh(plugin, state, parts, limits);
    };
    let used = store.data().limiter.used_bytes;
    if used > state.limiter.memory_bytes {
        drop(store);
        drop(room);
        return fresh(plugin, state, parts, limits);
    }
    state.limiter.used_bytes = used;
    // The spare's data (its empty context, table and limits) goes here.
    drop(std::mem::replace(store.data_mut(), state));
    arm(plugin, &mut store, limits)?;
    Ok(Prepared {
        store,
        instance: Some(instance),
        parts,
        _room: Some(room),
    })
}

/// A store for a spare instance: no grants, no call, the runtime's
/// largest memory limit (a call's own limit applies when it adopts it).
pub(crate) fn spare_store(plugin: &PluginInner) -> Result<Store<HostState>, String> {
    let limits = CallLimits {
        memory_bytes: plugin.runtime.shared.config.max_memory_bytes,
        ..CallLimits::DEFAULT
    };
    let prepared = prepare(
        plugin,
        None,
        "spare",
        "spare",
        &Grants::default(),
        &limits,
        CallSide::default(),
    )?;
    Ok(prepared.store)
}
