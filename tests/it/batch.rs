//! The gate: validation before dispatch, unknown tools, and batches where
//! one failing call never takes its siblings down.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use warden_api::{CallLimits, CallRequest, Grants, ToolHost};
use warden_gate::{Gate, GateError};
use warden_policy::{AgentPolicy, Mode, RuleSet};

use crate::common::{self, data, error};

fn request(tool: &str, args: Value, id: usize) -> CallRequest {
    let mut context = common::context();
    context.request_id = format!("r{id}");
    CallRequest {
        tool: tool.into(),
        args,
        context,
    }
}

async fn gate() -> Gate {
    let probe = common::probe().await;
    let fs = common::fs_plugin().await;
    Gate::builder()
        .limits(CallLimits {
            deadline: Duration::from_millis(500),
            ..common::limits()
        })
        .agent(AgentPolicy::rules_only(
            "test-agent",
            Mode::Autonomous,
            RuleSet::default(),
        ))
        .backend("probe", Arc::new(probe), Grants::default())
        .unwrap()
        .backend("fs", Arc::new(fs), Grants::default())
        .unwrap()
        .build()
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_are_validated_with_the_field_path() {
    let gate = gate().await;
    let e = gate
        .call(request("fs_read", json!({"path": "a", "limit": "ten"}), 1))
        .await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("ArgumentValidationError", "invalid_argument")
    );
    assert!(msg.contains("/limit"), "{msg}");
    let e = gate.call(request("fs_read", json!({"pth": "a"}), 2)).await;
    let (_, _, msg) = error(&e);
    assert!(msg.contains("path") && msg.contains("pth"), "{msg}");
    let e = gate.call(request("fs_read", json!("a"), 3)).await;
    assert_eq!(error(&e).0, "ArgumentValidationError");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_are_error_results() {
    let gate = gate().await;
    let e = gate.call(request("fs_teleport", json!({}), 1)).await;
    let (ty, _, msg) = error(&e);
    assert_eq!(ty, "UnknownTool");
    assert!(msg.contains("fs_teleport"), "{msg}");
    // Names are normalised.
    let e = gate
        .call(request(" PROBE_Run ", json!({"action": "noop"}), 2))
        .await;
    assert_eq!(data(&e)["ok"], true);
    // The old dotted spelling is not a name, but the error gives the new one.
    let e = gate
        .call(request(" PROBE.Run ", json!({"action": "noop"}), 3))
        .await;
    let (ty, _, msg) = error(&e);
    assert_eq!(ty, "UnknownTool");
    assert!(msg.contains("tools are named `probe_run` now"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_listed_sorted() {
    let gate = gate().await;
    let names: Vec<String> = gate
        .list_tools("test-agent")
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "fs_delete",
            "fs_edit",
            "fs_list",
            "fs_read",
            "fs_write",
            "probe_run"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_call_never_aborts_its_siblings() {
    let gate = gate().await;
    let requests = vec![
        request(
            "probe_run",
            json!({"action": "panic", "message": "first"}),
            0,
        ),
        request("probe_run", json!({"action": "noop"}), 1),
        request("probe_run", json!({"action": "spin", "ms": 60_000}), 2),
        request("probe_run", json!({"action": "bogus"}), 3),
        request("nope_tool", json!({}), 4),
        request(
            "probe_run",
            json!({"action": "alloc", "bytes": 500_000_000u64}),
            5,
        ),
        request("probe_run", json!({"action": "emit", "bytes": 3}), 6),
    ];
    let results = gate.call_batch(requests, Some(3)).await;
    let kinds: Vec<String> = results
        .iter()
        .map(|e| match e {
            warden_api::Envelope::Ok { .. } => "ok".to_owned(),
            other => error(other).1,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "guest_panic",
            "ok",
            "deadline_exceeded",
            "invalid_argument",
            "not_found",
            "memory_limit",
            "ok"
        ]
    );
    assert_eq!(data(&results[6])["detail"], "xxx");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_plugins_exporting_one_name_is_a_clear_error() {
    let probe = common::probe().await;
    let err = Gate::builder()
        .backend(
            "probe (first copy)",
            Arc::new(probe.clone()),
            Grants::default(),
        )
        .unwrap()
        .backend("probe (second copy)", Arc::new(probe), Grants::default())
        .unwrap_err();
    assert!(matches!(err, GateError::DuplicateTool { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("first copy") && msg.contains("second copy") && msg.contains("probe_run"),
        "{msg}"
    );
}

/// Counts how many of its calls run at once; each call waits for a
/// permit the test hands out.
struct Counter {
    running: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    entered: tokio::sync::Notify,
    release: tokio::sync::Semaphore,
}

impl warden_api::Backend for Counter {
    fn tools(&self) -> Vec<warden_api::ToolSpec> {
        vec![
            serde_json::from_value(json!({
                "name": "count_wait",
                "summary": "Waits for a permit.",
                "description": "Waits for a permit, counting the calls that wait together.",
                "category": "memory",
                "action-type": "memory:read",
                "params-schema": {"type": "object"},
                "result-schema": {"type": "object"},
                "side-effect": false,
            }))
            .unwrap(),
        ]
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Wasm
    }

    fn invoke<'a>(
        &'a self,
        _call: warden_api::BackendCall<'a>,
    ) -> warden_api::BoxFuture<'a, warden_api::Envelope> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            let now = self.running.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            self.entered.notify_waiters();
            let permit = self.release.acquire().await.unwrap();
            permit.forget();
            self.running.fetch_sub(1, SeqCst);
            warden_api::Envelope::ok(json!({}))
        })
    }
}

/// A batch with a concurrency limit runs that many calls at once, never
/// more: the calls hold until three wait together, then all are let go.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_runs_at_most_its_concurrency_limit_at_once() {
    use std::sync::atomic::Ordering::SeqCst;
    let counter = Arc::new(Counter {
        running: 0.into(),
        most: 0.into(),
        entered: tokio::sync::Notify::new(),
        release: tokio::sync::Semaphore::new(0),
    });
    let gate = Gate::builder()
        .agent(AgentPolicy::rules_only(
            "test-agent",
            Mode::Autonomous,
            RuleSet::default(),
        ))
        .backend("count", counter.clone(), Grants::default())
        .unwrap()
        .build();
    let requests = (0..10)
        .map(|i| request("count_wait", json!({}), i))
        .collect();
    let batch = {
        let gate = gate.clone();
        tokio::spawn(async move { gate.call_batch(requests, Some(3)).await })
    };
    loop {
        let entered = counter.entered.notified();
        if counter.running.load(SeqCst) >= 3 {
            break;
        }
        entered.await;
    }
    assert_eq!(counter.most.load(SeqCst), 3, "three run together");
    counter.release.add_permits(10);
    let results = batch.await.unwrap();
    assert!(results.iter().all(warden_api::Envelope::is_ok));
    assert_eq!(counter.most.load(SeqCst), 3, "and never more than three");
}
