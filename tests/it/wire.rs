//! A raw JSON-RPC client over an in-memory stream to an in-process MCP
//! server: what a client sends and sees, with no SDK in between.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use warden_mcp::Server;

/// A JSON-RPC peer over newline-delimited JSON.
pub struct Wire {
    write: WriteHalf<DuplexStream>,
    read: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl Wire {
    /// Starts a session for `agent` and returns the client's end.
    pub fn start(server: &Server, agent: &str) -> Wire {
        use rmcp_free::serve;
        let (client, server_side) = tokio::io::duplex(1 << 20);
        serve(server, agent, server_side);
        let (read, write) = tokio::io::split(client);
        Wire {
            write,
            read: BufReader::new(read).lines(),
        }
    }

    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    pub async fn send_raw(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
        self.write.flush().await.unwrap();
    }

    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.read.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("the server keeps the stream open");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and returns its response, collecting whatever
    /// notifications and server requests arrive first.
    pub async fn request(&mut self, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.until_response(id).await
    }

    pub async fn until_response(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut seen = Vec::new();
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return (message, seen);
            }
            seen.push(message);
        }
    }

    pub async fn initialize(&mut self, capabilities: Value) {
        let (response, _) = self
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "raw", "version": "0"}
                }),
            )
            .await;
        assert_eq!(
            response["result"]["protocolVersion"], "2025-11-25",
            "{response}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
}

/// Keeps rmcp's serve call in one place (the test crate has no rmcp).
mod rmcp_free {
    use tokio::io::DuplexStream;
    use warden_mcp::Server;

    pub fn serve(server: &Server, agent: &str, io: DuplexStream) {
        let server = server.clone();
        let agent = agent.to_owned();
        tokio::spawn(async move {
            let _ = warden_mcp::serve_stream(server, agent, io).await;
        });
    }
}
