use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream};

use super::Lines;

/// A session's transport over in-memory pipes: the server's side of its
/// output, and the transport.
fn session(max_line: usize) -> (DuplexStream, Lines<DuplexStream, tokio::io::Sink>) {
    let (server, ours) = tokio::io::duplex(1 << 20);
    (server, Lines::new(ours, tokio::io::sink(), max_line))
}

async fn call(lines: &mut Lines<DuplexStream, tokio::io::Sink>, id: u64) {
    let request: TxJsonRpcMessage<RoleClient> = serde_json::from_value(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}}
    }))
    .unwrap();
    lines.send(request).await.unwrap();
}

/// What rmcp's own parse makes of `line`, as its debug form (which names
/// the variants; the messages have no equality of their own).
fn rmcp(line: &str) -> String {
    let message: RxJsonRpcMessage<RoleClient> = serde_json::from_str(line).unwrap();
    format!("{message:?}")
}

async fn next(lines: &mut Lines<DuplexStream, tokio::io::Sink>) -> String {
    format!("{:?}", lines.receive().await.unwrap())
}

fn answer(id: u64, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

#[tokio::test]
async fn answers_to_its_calls_are_what_rmcp_makes_of_them() {
    let results = [
        json!({"content": [{"type": "text", "text": "x"}], "isError": false}),
        json!({"content": [{"type": "image", "data": "AAEC", "mimeType": "image/png"}]}),
        json!({"content": [{"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}]}),
        json!({"content": [], "structuredContent": {"n": 1}}),
        json!({"content": [], "structuredContent": null}),
        json!({"content": [{"type": "text", "text": "bad"}], "isError": true,
               "structuredContent": {"reason": "bad"}, "_meta": {"k": 1}}),
        json!({"structuredContent": [1, 2]}),
        // Not a tool result (another result type wins in rmcp's parse).
        json!({"resultType": "input_required", "inputRequests": {}}),
        json!({"tools": []}),
        json!({}),
    ];
    let (mut server, mut lines) = session(1 << 20);
    for (i, result) in results.iter().enumerate() {
        let id = i as u64 + 1;
        call(&mut lines, id).await;
        let line = answer(id, result.clone());
        server
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        assert_eq!(next(&mut lines).await, rmcp(&line), "{line}");
    }
    assert!(lines.pending.is_empty(), "every answer settled its id");
    assert_eq!(
        lines.direct, 7,
        "the tool results were read as such at once"
    );
}

#[tokio::test]
async fn other_lines_take_rmcps_parse_and_bad_ones_are_skipped() {
    let (mut server, mut lines) = session(100);
    call(&mut lines, 1).await;
    let long = format!("{}\n", "x".repeat(500));
    let notice =
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string();
    // An answer to an id that is no call of ours, an error for our call,
    // a line too long, garbage, an empty line, CRLF and a byte-order mark.
    let stranger = answer(9, json!({"content": []}));
    let error =
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}}).to_string();
    let text = format!(
        "{stranger}\n{long}not json\n\n\u{feff}{notice}\r\n{error}\n{}",
        "y".repeat(100)
    );
    server.write_all(text.as_bytes()).await.unwrap();
    assert_eq!(next(&mut lines).await, rmcp(&stranger));
    assert_eq!(next(&mut lines).await, rmcp(&notice));
    assert_eq!(next(&mut lines).await, rmcp(&error));
    assert!(lines.pending.is_empty(), "the error settled the call");
    assert_eq!(lines.direct, 0, "a stranger's answer is not taken for ours");
    // The line over the bound with no end yet is dropped as it comes; the
    // stream's end ends the session.
    server.write_all(b"z\n").await.unwrap();
    drop(server);
    assert!(lines.receive().await.is_none());
    assert!(
        lines.read.line.capacity() <= 256,
        "{}",
        lines.read.line.capacity()
    );
}

#[tokio::test]
async fn a_cancelled_call_is_no_longer_pending_and_the_ids_are_bounded() {
    let (_server, mut lines) = session(1 << 20);
    call(&mut lines, 1).await;
    let cancel: TxJsonRpcMessage<RoleClient> = serde_json::from_value(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "timeout"}
    }))
    .unwrap();
    lines.send(cancel).await.unwrap();
    assert!(lines.pending.is_empty());
    for id in 0..(super::PENDING_MAX as u64 + 10) {
        call(&mut lines, id).await;
    }
    assert!(lines.pending.len() <= super::PENDING_MAX);
}
