//! One call: a fresh `Store` from the call's grants, the guest invoked
//! under its limits, and whatever happened turned into an envelope.
//!
//! Nothing survives between calls: each gets a new instance (made for
//! it, or made ahead and never run: [`crate::spare`]), so one call can
//! neither see nor corrupt another's state, and a trapped instance is
//! simply dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::RuntimeFlavor;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

use warden_api::{BackendCall, CallLimits, Envelope, ErrorType, Grants};

use crate::bindings::{self, ErrorKind};
use crate::call_store::{CallSide, Prepared, prepare};
use crate::limits::DeadlineExceeded;
use crate::plugin::PluginInner;
use crate::spare::Spare;

/// Slack for the host-side timeout beyond the guest deadline: the epoch
/// check fires first; this catches a guest blocked in a host call.
const HOST_GRACE: Duration = Duration::from_millis(250);

/// `tools()` in a store with no grants, for the load-time cross-check.
pub(crate) async fn list_tools(
    plugin: &PluginInner,
    limits: CallLimits,
) -> Result<Vec<bindings::ToolSpec>, String> {
    let mut p = prepare(
        plugin,
        None,
        "tools()",
        "load",
        &Grants::default(),
        &limits,
        CallSide::default(),
    )?;
    let run = async {
        let instance = plugin.pre.instantiate_async(&mut p.store).await?;
        instance.call_tools(&mut p.store).await
    };
    let result = tokio::time::timeout(limits.deadline + HOST_GRACE, run).await;
    drain_logs(plugin, "tools()", &p);
    match result {
        Err(_) => Err("tools() did not return before the deadline".into()),
        Ok(Err(e)) => Err(format!(
            "tools() failed: {}",
            crash_message(&e, &p.parts.stderr.contents().0)
        )),
        Ok(Ok(tools)) => Ok(tools),
    }
}

pub(crate) async fn invoke(plugin: &Arc<PluginInner>, call: BackendCall<'_>) -> Envelope {
    let shared = &plugin.runtime.shared;
    let Ok(slot) = Arc::clone(&shared.slots).acquire_owned().await else {
        return Envelope::error(
            ErrorType::HostError,
            "runtime_closed",
            "the runtime is shutting down",
        );
    };
    // Taken once the call has its slot: a spare never lets a call pass
    // the ones waiting for theirs.
    let spare = plugin.spare.take();
    let tool = call.tool.name.as_str();
    let ctx = call.context;
    let span = tracing::info_span!(
        "call", tool, plugin = %plugin.manifest.plugin.name,
        agent = %ctx.agent, session = %ctx.session, task = ctx.task.as_deref(), request_id = %ctx.request_id
    );
    run_call(plugin, call, slot, spare).instrument(span).await
}

async fn run_call(
    plugin: &Arc<PluginInner>,
    call: BackendCall<'_>,
    slot: OwnedSemaphorePermit,
    spare: Option<Spare>,
) -> Envelope {
    let tool = call.tool.name.as_str();
    let ctx = call.context;
    let started = Instant::now();
    let mut p = match prepare(
        plugin,
        spare,
        tool,
        &ctx.request_id,
        call.grants,
        &call.limits,
        CallSide {
            events: call.events.cloned(),
            paths: call.paths.cloned(),
            cwd: call.cwd.map(str::to_owned),
        },
    ) {
        Ok(p) => p,
        Err(e) => return Envelope::error(ErrorType::HostError, "grant_unavailable", e),
    };
    let wit_ctx = bindings::CallContext {
        agent: ctx.agent.clone(),
        session: ctx.session.clone(),
        task: ctx.task.clone(),
        request_id: ctx.request_id.clone(),
        cwd: p.parts.cwd.clone(),
        granted_dirs: p.parts.dirs.clone(),
    };
    let args = call.args.to_string();
    let run = async {
        let instance = match p.instance.take() {
            Some(instance) => instance,
            None => plugin.pre.instantiate_async(&mut p.store).await?,
        };
        instance
            .call_invoke(&mut p.store, &wit_ctx, tool, &args)
            .await
    };
    let outcome = tokio::time::timeout(call.limits.deadline + HOST_GRACE, run).await;
    drain_logs(plugin, tool, &p);
    let limits = &call.limits;
    let envelope = match outcome {
        Err(_) => deadline(limits),
        Ok(Err(e)) if p.store.data().limiter.memory_hit => {
            tracing::debug!(error = %format!("{e:#}"), "memory limit trap");
            Envelope::error(
                ErrorType::LimitExceeded,
                "memory_limit",
                format!(
                    "the call exceeded its memory limit of {} MiB; raise the limit or make the input smaller",
                    limits.memory_bytes >> 20
                ),
            )
        }
        Ok(Err(e)) if e.is::<DeadlineExceeded>() => deadline(limits),
        Ok(Err(e)) if out_of_fuel(&e) => fuel(limits),
        Ok(Err(e)) => {
            let (stderr, _) = p.parts.stderr.contents();
            let code = if panic_message(&stderr).is_some() {
                "guest_panic"
            } else {
                "guest_trap"
            };
            Envelope::error(ErrorType::ToolCrashed, code, crash_message(&e, &stderr))
        }
        Ok(Ok(Err(err))) => tool_error(err),
        Ok(Ok(Ok(json))) => output(json, limits),
    };
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        ok = envelope.is_ok(),
        "call finished"
    );
    retire(plugin, p, slot);
    envelope
}

/// Releases a finished call's store (its instance, the memory the pool
/// resets, the handles its guest left open), and then its slot. On a
/// single-threaded runtime (a stdio session, an HTTP worker) that waits until the answer
/// is on its way: the reset is a tenth of a small call's work, and
/// nothing of it is the caller's to wait for; the plugin's next spare
/// instance ([`crate::spare`]) is made in the same idle time. On a
/// multi-threaded one it happens here: a task for it would wake an idle
/// worker, which costs more than the reset. The slot goes after the
/// store, so a call admitted by it finds the instance pool with room.
fn retire(plugin: &Arc<PluginInner>, store: Prepared, slot: OwnedSemaphorePermit) {
    let runtime = match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::CurrentThread => runtime,
        _ => {
            drop(store);
            drop(slot);
            return;
        }
    };
    let plugin = Arc::clone(plugin);
    runtime.spawn(async move {
        // Behind whatever is ready now, the answer among it.
        tokio::task::yield_now().await;
        drop(store);
        drop(slot);
        crate::spare::replenish(plugin).await;
    });
}

/// `resource(tool, id)`: a tool's on-demand document, fetched in a store
/// with no grants (documents are static), under the same limits as calls.
pub(crate) async fn resource(
    plugin: &PluginInner,
    tool: &str,
    id: &str,
    limits: CallLimits,
) -> Envelope {
    let mut p = match prepare(
        plugin,
        None,
        tool,
        "resource",
        &Grants::default(),
        &limits,
        CallSide::default(),
    ) {
        Ok(p) => p,
        Err(e) => return Envelope::error(ErrorType::HostError, "grant_unavailable", e),
    };
    let run = async {
        let instance = plugin.pre.instantiate_async(&mut p.store).await?;
        instance.call_resource(&mut p.store, tool, id).await
    };
    let outcome = tokio::time::timeout(limits.deadline + HOST_GRACE, run).await;
    drain_logs(plugin, tool, &p);
    match outcome {
        Err(_) => deadline(&limits),
        Ok(Err(e)) if e.is::<DeadlineExceeded>() => deadline(&limits),
        Ok(Err(e)) if out_of_fuel(&e) => fuel(&limits),
        Ok(Err(e)) => Envelope::error(
            ErrorType::ToolCrashed,
            "guest_trap",
            crash_message(&e, &p.parts.stderr.contents().0),
        ),
        Ok(Ok(Err(err))) => tool_error(err),
        Ok(Ok(Ok(text))) => output(serde_json::Value::String(text).to_string(), &limits),
    }
}

fn deadline(limits: &CallLimits) -> Envelope {
    Envelope::error(
        ErrorType::LimitExceeded,
        "deadline_exceeded",
        format!(
            "the call did not finish within its deadline of {} ms",
            limits.deadline.as_millis()
        ),
    )
}

/// Whether a call trapped because it burnt all its fuel.
fn out_of_fuel(e: &wasmtime::Error) -> bool {
    e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::OutOfFuel)
}

fn fuel(limits: &CallLimits) -> Envelope {
    Envelope::error(
        ErrorType::LimitExceeded,
        "fuel_exhausted",
        format!(
            "the call burnt all its fuel ({} units) before it finished",
            limits.fuel.unwrap_or(u64::MAX)
        ),
    )
}

fn output(json: String, limits: &CallLimits) -> Envelope {
    if json.len() as u64 > limits.output_bytes {
        return Envelope::error(
            ErrorType::LimitExceeded,
            "output_limit",
            format!(
                "the result is {} bytes, over the output limit of {} bytes; ask for less (e.g. a line range or a tighter filter)",
                json.len(),
                limits.output_bytes
            ),
        );
    }
    match serde_json::from_str(&json) {
        Ok(data) => Envelope::ok(data),
        Err(e) => Envelope::error(
            ErrorType::ToolCrashed,
            "invalid_result",
            format!("the tool returned invalid JSON: {e}"),
        ),
    }
}

fn tool_error(err: bindings::ToolError) -> Envelope {
    let default_code = match err.kind {
        ErrorKind::InvalidArgument => "invalid_argument",
        ErrorKind::NotFound => "not_found",
        ErrorKind::AccessDenied => "access_denied",
        ErrorKind::Conflict => "conflict",
        ErrorKind::Unsupported => "not_supported",
        ErrorKind::Failed => "failed",
    };
    let code = err
        .code
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| default_code.to_owned());
    Envelope::error(ErrorType::ToolError, code, err.message)
}

/// A panic's message from the guest's stderr, if the guest panicked.
fn panic_message(stderr: &str) -> Option<String> {
    let at = stderr.find("panicked at ")?;
    let text: Vec<&str> = stderr[at..]
        .lines()
        .take_while(|l| !l.starts_with("note: "))
        .collect();
    Some(text.join(" ").trim().to_owned())
}

fn crash_message(e: &wasmtime::Error, stderr: &str) -> String {
    if let Some(panic) = panic_message(stderr) {
        return format!("the tool {panic}");
    }
    let trap = e
        .downcast_ref::<wasmtime::Trap>()
        .map(ToString::to_string)
        .unwrap_or_else(|| e.to_string().lines().next().unwrap_or_default().to_owned());
    format!("the tool crashed: {trap}")
}

fn drain_logs(plugin: &PluginInner, tool: &str, p: &Prepared) {
    let name = &plugin.manifest.plugin.name;
    for (stream, out) in [("stdout", &p.parts.stdout), ("stderr", &p.parts.stderr)] {
        let (text, dropped) = out.contents();
        if !text.is_empty() || dropped > 0 {
            tracing::info!(target: "warden::guest", plugin = %name, tool, stream, dropped_bytes = dropped, "{}", text.trim_end());
        }
    }
    p.store.data().host.report_dropped();
    let dropped = p.store.data().host.dropped_lines();
    if dropped > 0 {
        tracing::warn!(plugin = %name, tool, dropped_lines = dropped, "plugin exceeded its log allowance");
    }
}
