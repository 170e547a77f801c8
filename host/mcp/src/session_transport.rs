//! A served session's transport over a byte stream (`warden serve
//! --stdio`, [`crate::serve_stream`]): newline-delimited JSON-RPC, with a
//! `tools/call` request read as one at once.
//!
//! Why not rmcp's transport alone: it parses every line as any message
//! (an untagged union, buffered) and a request as each request a client
//! may send in turn, every miss building an error; `tools/call` comes
//! after a dozen of them. Measured on this project's 2-core machine, that
//! parse takes 5.2 µs for a small call against 1.3 µs for the `tools/call`
//! request type alone, and it was the largest part of reading a call.
//! Here a line that parses as a `tools/call` request is one, through
//! rmcp's own types; every other line (and a `tools/call` that does not
//! parse as one) goes to rmcp's transport, which reads it from an
//! in-memory feed and does exactly what it would have done with it: the
//! same message, the same compatibility rules for unknown notifications,
//! the same `Invalid Request` answer to a malformed message. Writing is
//! rmcp's transport's.
//!
//! Attack: a client that floods, never ends a line or sends garbage: a
//! line is never held past rmcp's bound (`line_reader.rs`); anything
//! that is not a `tools/call` request meets rmcp's handling unchanged.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use rmcp::RoleServer;
use rmcp::model::{CallToolRequest, ClientRequest, JsonRpcMessage, JsonRpcRequest};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::line_reader::LineReader;

/// The transport of one served session.
pub(crate) struct SessionTransport<R, W: AsyncWrite> {
    read: LineReader<R>,
    /// Lines for rmcp's transport to read.
    feed: Feed,
    /// rmcp's transport, reading `feed` and writing the session's output.
    rmcp: AsyncRwTransport<RoleServer, Feed, W>,
}

impl<R, W> SessionTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub fn new(read: R, write: W) -> SessionTransport<R, W> {
        let feed = Feed::default();
        SessionTransport {
            read: LineReader::new(read, DEFAULT_MAX_LINE_LENGTH, "MCP client"),
            rmcp: AsyncRwTransport::new_server(feed.clone(), write),
            feed,
        }
    }

    /// Drives rmcp's transport over what was fed to it, until it has a
    /// message or asks for more than there is.
    async fn drive_rmcp(&mut self) -> Fed {
        let feed = &self.feed;
        let mut receive = pin!(self.rmcp.receive());
        poll_fn(|cx| match receive.as_mut().poll(cx) {
            Poll::Ready(Some(message)) => Poll::Ready(Fed::Message(Box::new(message))),
            Poll::Ready(None) => Poll::Ready(Fed::Closed),
            Poll::Pending if feed.lock().starved => Poll::Ready(Fed::Starved),
            Poll::Pending => Poll::Pending,
        })
        .await
    }
}

/// What rmcp's transport made of the lines fed to it.
enum Fed {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// It ended (its output is closed).
    Closed,
    /// It read everything and wants more.
    Starved,
}

/// `line` as a `tools/call` request, when it is one.
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    // Other lines skip the attempt (a `tools/call` whose method is
    // written with escapes takes rmcp's path, to the same message).
    if !std::str::from_utf8(line).is_ok_and(|text| text.contains("\"tools/call\"")) {
        return None;
    }
    let call: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(call.request),
    }))
}

impl<R, W> Transport<RoleServer> for SessionTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.rmcp.send(item)
    }

    /// Cancel-safe, as rmcp's own: a line read in part stays in the line
    /// reader, a line fed stays in the feed or in rmcp's transport, and
    /// rmcp's transport is driven again before any new line is read.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.feed.lock().starved {
                match self.drive_rmcp().await {
                    Fed::Message(message) => return Some(*message),
                    Fed::Closed => return None,
                    Fed::Starved => {}
                }
            }
            let line = self.read.next_line().await?;
            let call = tool_call(&line);
            if call.is_none() && !line.is_empty() {
                self.feed.push(&line);
            }
            self.read.recycle(line);
            if call.is_some() {
                return call;
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.rmcp.close()
    }
}

/// Bytes for rmcp's transport: a reader that is pending, and says it
/// starved, once it has handed out everything pushed.
#[derive(Clone)]
struct Feed(Arc<Mutex<FeedState>>);

#[derive(Default)]
struct FeedState {
    bytes: VecDeque<u8>,
    /// A read found nothing left (it waits for a push).
    starved: bool,
    waker: Option<Waker>,
}

impl Feed {
    fn lock(&self) -> MutexGuard<'_, FeedState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `line` and its end.
    fn push(&self, line: &[u8]) {
        let mut state = self.lock();
        state.bytes.extend(line);
        state.bytes.push_back(b'\n');
        state.starved = false;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }
}

impl Default for Feed {
    fn default() -> Feed {
        Feed(Arc::new(Mutex::new(FeedState {
            // Nothing was pushed: nothing to read.
            starved: true,
            ..FeedState::default()
        })))
    }
}

impl AsyncRead for Feed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut state = self.lock();
        if state.bytes.is_empty() {
            state.starved = true;
            state.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let (front, _) = state.bytes.as_slices();
        let n = buf.remaining().min(front.len());
        buf.put_slice(&front[..n]);
        state.bytes.drain(..n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests;
