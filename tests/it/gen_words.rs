//! A toolsmith-made tool as the gate serves it (`Generated`), on the real
//! `gen_words` component: the spec is the host's (category, action
//! type, side effect, the blueprint's schemas and texts), a call runs
//! under `[toolsmith.sandbox]`'s limits (its deadline and its fuel)
//! however generous the host's, only on a runtime that meters fuel, and
//! the validation's first checks hold its asks to the grants.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use warden_api::{Backend, BackendCall, CallLimits, Envelope, ErrorType, Grants};
use warden_server::toolsmith::{Generated, check_component, fuel_runtime};
use warden_toolsmith::{Blueprint, Derived, FsGrant, FsMode, Limits, Sandbox, ToolLimits};

use crate::common;

fn blueprint() -> Blueprint {
    let text = json!({
        "capability": "words:count",
        "title": "Count words",
        "description": "Counts the words of a text, as the person approved.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100}},
                         "required": ["text"]},
        "output_schema": {"type": "object", "properties": {"words": {"type": "integer", "minimum": 0}}},
        "body": {"rust": {"lib_rs": "// prebuilt in this test"}},
        "cases": [
            {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
            {"name": "one", "args": {"text": "a"}, "expect": {"ok": {"equals": {"words": 1}}}},
            {"name": "trap", "args": {"text": "trap"}, "expect": {"error": {}}}
        ],
        "rationale": "asked for"
    });
    Blueprint::parse(
        &text.to_string(),
        &Limits {
            max_source_bytes: 1 << 20,
            max_component_bytes: 8 << 20,
        },
    )
    .unwrap()
}

fn derived(fs: bool, deadline_ms: u64) -> Derived {
    with_fuel(fs, deadline_ms, ToolLimits::default().fuel)
}

fn with_fuel(fs: bool, deadline_ms: u64, fuel: u64) -> Derived {
    Derived {
        name: "gen_words_count".into(),
        capability: "words:count".into(),
        category: "analytics".into(),
        action_type: "code:read".into(),
        grants: Sandbox {
            fs: if fs {
                vec![FsGrant {
                    path: "data".into(),
                    mode: FsMode::Ro,
                }]
            } else {
                Vec::new()
            },
            limits: ToolLimits {
                deadline_ms,
                fuel,
                ..ToolLimits::default()
            },
            ..Sandbox::default()
        },
        side_effect: true,
    }
}

/// One call of `generated`'s tool, with a host deadline of 30 s.
async fn run(
    generated: &Generated,
    spec: &warden_api::ToolSpec,
    args: serde_json::Value,
) -> Envelope {
    let context = common::context();
    generated
        .invoke(BackendCall {
            tool: spec,
            args: &args,
            context: &context,
            grants: &Grants::default(),
            limits: CallLimits {
                deadline: Duration::from_secs(30),
                ..CallLimits::default()
            },
            events: None,
            paths: None,
            cwd: None,
            remote: None,
        })
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_tool_runs_under_the_hosts_spec_and_limits() {
    let wasm = std::fs::read(warden_test_artifacts::GEN_WORDS).unwrap();
    let derived = derived(true, 300);
    // Only a runtime that meters fuel runs generated tools.
    let err = check_component(&common::runtime(), &wasm, &derived, &|_| false)
        .await
        .unwrap_err();
    assert!(err.contains("fuel"), "{err}");
    let runtime = fuel_runtime(None).unwrap();
    let plugin = check_component(&runtime, &wasm, &derived, &|_| false)
        .await
        .unwrap_or_else(|e| panic!("the component passes its first checks: {e}"));

    // Its asks beyond the grants fail; under another name it fails.
    let err = check_component(&runtime, &wasm, &self::derived(false, 300), &|_| false)
        .await
        .unwrap_err();
    assert!(err.contains("filesystem"), "{err}");
    let renamed = Derived {
        name: "gen_words_total".into(),
        ..derived.clone()
    };
    let err = check_component(&runtime, &wasm, &renamed, &|_| false)
        .await
        .unwrap_err();
    assert!(err.contains("gen_words_total"), "{err}");

    let generated = Generated::new(Arc::new(plugin), &derived, &blueprint()).unwrap();
    let spec = generated.tools().remove(0);
    assert_eq!(
        spec.description,
        "Counts the words of a text, as the person approved."
    );
    assert_eq!(spec.params_schema["properties"]["text"]["maxLength"], 100);
    assert!(
        spec.side_effect,
        "the host's side-effect flag, not the component's"
    );

    let call_on = |generated, args| run(generated, &spec, args);
    let call = |args| run(&generated, &spec, args);
    assert_eq!(
        call(json!({"text": "a b c"})).await,
        Envelope::ok(json!({"words": 3}))
    );
    // The host allows 30 s; `[toolsmith.sandbox]` 300 ms, which holds.
    let started = Instant::now();
    match call(json!({"text": "spin"})).await {
        Envelope::Error { error_type, .. } => assert_eq!(error_type, ErrorType::LimitExceeded),
        other => panic!("a spinning call is stopped: {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the tool's limit stops it, not the host's 30 s: {:?}",
        started.elapsed()
    );

    // A generous deadline, little fuel: the fuel stops the spin.
    let frugal = with_fuel(true, 30_000, 50_000_000);
    let plugin = check_component(&runtime, &wasm, &frugal, &|_| false)
        .await
        .unwrap();
    let frugal = Generated::new(Arc::new(plugin), &frugal, &blueprint()).unwrap();
    assert_eq!(
        call_on(&frugal, json!({"text": "a b"})).await,
        Envelope::ok(json!({"words": 2})),
        "a small call fits in its fuel"
    );
    let started = Instant::now();
    match call_on(&frugal, json!({"text": "spin"})).await {
        Envelope::Error {
            error_type,
            domain_code,
            ..
        } => {
            assert_eq!(error_type, ErrorType::LimitExceeded);
            assert_eq!(domain_code, "fuel_exhausted");
        }
        other => panic!("a spinning call runs out of fuel: {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}
