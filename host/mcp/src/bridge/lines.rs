//! A stdio session's transport: newline-delimited JSON-RPC with the
//! server, read line by line within a length bound, with the answers to
//! Warden's own `tools/call` requests parsed as tool results directly.
//!
//! Why not rmcp's stdio transport alone: it parses every incoming line as
//! any message (an untagged union, buffered) and a result as any of the
//! results a server may send, tried in turn; a tool result comes
//! sixteenth. That was the largest part of the bridge's own CPU per
//! call after the audit commit. Here an answer whose id is a pending
//! `tools/call` of this session is read as a tool result at once; every
//! other line, and an answer that is not a well-formed tool result, goes
//! through rmcp's own parse, so what reaches the client is what it would
//! have been. Writing is rmcp's transport's.
//!
//! Attack: a server that floods, never ends a line, or sends garbage.
//! A line is never held past the session's length bound (the rest of an
//! oversized line is skipped, not buffered: `line_reader.rs`); a line
//! that is not a message is skipped and logged, and the session goes on,
//! as with rmcp's transport. The pending ids are bounded, so requests a
//! server never answers cannot grow them.

use std::collections::HashSet;
use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcResponse,
    JsonRpcVersion2_0, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::line_reader::LineReader;

/// Ids of `tools/call` requests kept at most; past it the set starts
/// again (answers then take the general parse, nothing else changes).
const PENDING_MAX: usize = 4096;

/// The transport of one stdio session.
pub(crate) struct Lines<R, W: AsyncWrite> {
    read: LineReader<R>,
    /// rmcp's transport, for writing only.
    write: AsyncRwTransport<RoleClient, tokio::io::Empty, W>,
    /// The ids of this session's `tools/call` requests not answered yet.
    pending: HashSet<RequestId>,
    /// Answers read as tool results at once.
    #[cfg(test)]
    direct: usize,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub fn new(read: R, write: W, max_line: usize) -> Lines<R, W> {
        Lines {
            read: LineReader::new(read, max_line, "bridged server"),
            write: AsyncRwTransport::new_client(tokio::io::empty(), write),
            pending: HashSet::new(),
            #[cfg(test)]
            direct: 0,
        }
    }

    /// The message on `line`, if it is one. With no call pending (a
    /// listing, a notification) the line goes straight to rmcp's parse.
    fn parse(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if !self.pending.is_empty()
            && let Ok(answer) = serde_json::from_slice::<ToolAnswer>(line)
            && !answer.method
            && !answer.error
            && self.pending.remove(&answer.id)
        {
            #[cfg(test)]
            {
                self.direct += 1;
            }
            return Some(JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: answer.jsonrpc,
                id: answer.id,
                result: ServerResult::CallToolResult(answer.result),
            }));
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
            Ok(message) => {
                match &message {
                    JsonRpcMessage::Response(r) => {
                        self.pending.remove(&r.id);
                    }
                    JsonRpcMessage::Error(e) => {
                        if let Some(id) = &e.id {
                            self.pending.remove(id);
                        }
                    }
                    JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
                }
                Some(message)
            }
            Err(e) => {
                tracing::debug!(error = %e, "a bridged server sent a line that is not a message; skipped");
                None
            }
        }
    }
}

/// An answer read as a tool result; `method` and `error` say whether
/// those keys were there at all (then it is not a plain answer).
#[derive(Deserialize)]
struct ToolAnswer {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: CallToolResult,
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl<R, W> Transport<RoleClient> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::CallToolRequest(_)) =>
            {
                if self.pending.len() >= PENDING_MAX {
                    self.pending.clear();
                }
                self.pending.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.pending.remove(id);
                }
            }
            _ => {}
        }
        self.write.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = self.read.next_line().await?;
            let parsed = (!line.is_empty()).then(|| self.parse(&line)).flatten();
            self.read.recycle(line);
            if parsed.is_some() {
                return parsed;
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.write.close()
    }
}

#[cfg(test)]
mod tests;
