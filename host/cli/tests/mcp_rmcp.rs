//! rmcp's own Rust client drives a real `warden serve --stdio` child on
//! the 2026-07-28 revision (`server/discover`, no `initialize`): tools
//! are listed and called, a denial and a tool error are readable error
//! results, and a `subscriptions/listen` stream announces the tool list
//! changing when a plugin is installed into the running server. A long
//! call leaves the session free for the client's other requests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

#[path = "support/mcp_fixture.rs"]
mod mcp_fixture;

use std::time::Duration;

use mcp_fixture::Fixture;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: the client raised instead of returning a result: {e}"))
}

/// The envelope an error result carries as its text.
fn envelope(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(result.structured_content.is_none(), "{result:?}");
    let text = result.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_client_on_the_2026_07_28_revision() {
    let fixture = Fixture::new();
    let state = fixture.path("state");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_warden"));
    command
        .args(["serve", "--stdio", "--agent", "alice", "--config"])
        .arg(fixture.path("warden.toml"))
        .arg("--state-dir")
        .arg(&state)
        .stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(command).unwrap();
    let client: Client = ()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let read = tools.iter().find(|t| t.name == "fs_read").unwrap();
    assert!(read.output_schema.is_some(), "{read:?}");

    // Success: structured content the client checked against the schema.
    let ok = call(&client, "fs_read", json!({"path": "hello.txt"})).await;
    assert_eq!(ok.is_error, Some(false), "{ok:?}");
    let content = ok.structured_content.unwrap();
    assert!(
        content.to_string().contains("hello from the workspace"),
        "{content}"
    );

    // A denial and a tool error: results with the reason, not exceptions.
    let denied = envelope(&call(&client, "fs_read", json!({"path": "/etc/shadow"})).await);
    assert_eq!(denied["error_type"], "PermissionDenied", "{denied}");
    assert!(
        denied["message"].as_str().unwrap().contains("/etc/shadow"),
        "{denied}"
    );
    let missing = envelope(&call(&client, "fs_read", json!({"path": "missing.txt"})).await);
    assert_eq!(missing["status"], "error", "{missing}");

    // Tool list changes on a subscriptions/listen stream.
    let mut changes = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    let installed = std::process::Command::new(env!("CARGO_BIN_EXE_warden"))
        .args([
            "plugin",
            "install",
            warden_test_artifacts::HELLO,
            "--state-dir",
        ])
        .arg(&state)
        .env("WARDEN_SIGNERS", warden_test_artifacts::signers_file())
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let changed = tokio::time::timeout(Duration::from_secs(30), changes.next())
        .await
        .expect("the change is announced in time")
        .unwrap();
    assert!(
        matches!(
            changed,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{changed:?}"
    );
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        tools.iter().any(|t| t.name == "hello_count_lines"),
        "the installed plugin is listed"
    );
    client.cancel().await.unwrap();
}

/// A stdio session runs on one thread: a call that computes for seconds
/// must still leave it free for the client's other requests, which are
/// answered while the long call runs (its guest yields at every epoch
/// tick).
#[tokio::test(flavor = "multi_thread")]
async fn a_long_call_holds_up_none_of_the_sessions_other_requests() {
    let fixture = Fixture::new();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_warden"));
    command
        .args(["serve", "--stdio", "--agent", "alice", "--config"])
        .arg(fixture.path("warden.toml"))
        .arg("--state-dir")
        .arg(fixture.path("state"))
        .stderr(std::process::Stdio::null());
    let client: Client = rmcp::ServiceExt::serve((), TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let client = std::sync::Arc::new(client);

    let long = {
        let client = std::sync::Arc::clone(&client);
        tokio::spawn(async move {
            call(
                &client,
                "probe_run",
                json!({"action": "steps", "steps": 40, "ms": 50}),
            )
            .await
        })
    };
    // Let the long call start computing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..5 {
        let read = call(&client, "fs_read", json!({"path": "hello.txt"})).await;
        assert_eq!(read.is_error, Some(false), "{read:?}");
        client
            .send_request(rmcp::model::ClientRequest::PingRequest(Default::default()))
            .await
            .unwrap();
        assert!(
            !long.is_finished(),
            "the short requests were answered only once the long call had ended"
        );
    }
    let long = long.await.unwrap();
    assert_eq!(long.is_error, Some(false), "{long:?}");
}
