#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use rmcp::service::RxJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;

/// What rmcp's own parse makes of `line`, as JSON.
fn rmcp_parse(line: &str) -> Value {
    let message: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line).unwrap();
    serde_json::to_value(message).unwrap()
}

#[test]
fn a_tools_call_line_is_the_message_rmcps_parse_makes() {
    for line in [
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs_read","arguments":{"path":"a.txt"}}}"#,
        r#"{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"t","_meta":{"progressToken":3,"io.example/k":[1]}}}"#,
        "\u{feff}{\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"arguments\":{}},\"id\":1,\"jsonrpc\":\"2.0\"}",
    ] {
        let direct = tool_call(line.as_bytes()).unwrap();
        let line = line.trim_start_matches('\u{feff}');
        assert_eq!(
            serde_json::to_value(direct).unwrap(),
            rmcp_parse(line),
            "{line}"
        );
    }
    // Not a call, or not a well-formed one: left to rmcp.
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":"tools/call"}}"#,
    ] {
        assert!(tool_call(line.as_bytes()).is_none(), "{line}");
    }
}

/// Every other line meets rmcp's transport as before: messages (rmcp's
/// custom ones too) come in order with the calls read directly, garbage
/// and empty lines are skipped, and JSON that is no message is answered
/// `Invalid Request`, on the session's own output.
#[tokio::test]
async fn other_lines_get_rmcps_handling_in_order() {
    let (mut client, ours) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(ours);
    let mut transport = SessionTransport::new(read, write);
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "a"}})
            .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/not-mcp"}).to_string(),
        "this is not json".to_owned(),
        String::new(),
        json!({"hello": "world"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "b"}})
            .to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}).to_string() + "\r",
    ];
    client
        .write_all((lines.join("\n") + "\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..7 {
        got.push(serde_json::to_value(transport.receive().await.unwrap()).unwrap());
    }
    let expected: Vec<Value> = [0, 1, 2, 3, 7, 8, 9]
        .map(|i| rmcp_parse(lines[i].trim_end()))
        .to_vec();
    assert_eq!(got, expected);
    // The malformed call was answered by rmcp's transport.
    let (output, _) = tokio::io::split(client);
    let mut answer = String::new();
    BufReader::new(output).read_line(&mut answer).await.unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null);
}

#[tokio::test]
async fn the_end_of_input_ends_the_session() {
    let (client, ours) = tokio::io::duplex(1024);
    let (read, write) = tokio::io::split(ours);
    let mut transport = SessionTransport::new(read, write);
    drop(client);
    assert!(transport.receive().await.is_none());
}

/// A receive dropped half way (rmcp's serve loop polls it in a
/// `select!`) loses no line, whether it was read in part or fed.
#[tokio::test]
async fn a_dropped_receive_loses_no_line() {
    let (mut client, ours) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(ours);
    let mut transport = SessionTransport::new(read, write);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    client.write_all(&ping.as_bytes()[..10]).await.unwrap();
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(20), transport.receive())
            .await
            .is_err()
    );
    client.write_all(&ping.as_bytes()[10..]).await.unwrap();
    client.write_all(b"\n").await.unwrap();
    let got = serde_json::to_value(transport.receive().await.unwrap()).unwrap();
    assert_eq!(got, rmcp_parse(&ping));
}
