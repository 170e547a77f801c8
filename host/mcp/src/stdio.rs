//! `warden serve --stdio`: one MCP session on standard input and output,
//! acting as one agent. Nothing else may write to stdout (logs go to
//! stderr). [`serve_stream`] serves the same over any byte stream.
//!
//! When standard input and output are pipes, as an MCP client starts a
//! server, they are read and written with non-blocking I/O on the
//! runtime's own threads. tokio's `stdin()` and `stdout()` hand every
//! read and every write to a blocking-pool thread and back: two thread
//! wake-ups per message, which on two cores was a measurable share of a
//! round trip. A terminal or a file still goes through tokio's, and so
//! does a stdout that is also stderr's pipe (`2>&1`): non-blocking mode
//! belongs to the shared pipe end, and log writes must stay blocking.
//!
//! `warden serve --stdio` runs the host on a single-threaded runtime (see
//! `docs/architecture.md`, Transport): this serves on whatever runtime
//! it is awaited on.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

use crate::busy_poll::BusyPoll;
use crate::session_transport::SessionTransport;
use crate::{McpError, Server};

/// Serves until the client closes the stream, polling busily for
/// `busy_poll` after each answer (see `busy_poll.rs`; zero: not at all).
pub async fn serve_stdio(
    server: Server,
    agent: String,
    busy_poll: Duration,
) -> Result<(), McpError> {
    let input: Box<dyn AsyncRead + Send + Unpin> = match input_pipe() {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn AsyncWrite + Send + Unpin> = match output_pipe() {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdout()),
    };
    let io = tokio::io::join(input, output);
    serve_stream(server, agent, BusyPoll::new(io, busy_poll)).await
}

/// Standard input as a non-blocking pipe, when it is one.
fn input_pipe() -> Option<pipe::Receiver> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    pipe::Receiver::from_owned_fd(fd).ok()
}

/// Standard output as a non-blocking pipe, when it is one that stderr
/// does not share.
fn output_pipe() -> Option<pipe::Sender> {
    let out = File::from(std::io::stdout().as_fd().try_clone_to_owned().ok()?);
    let err = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(File::from);
    let shared = match (out.metadata(), err.map(|e| e.metadata())) {
        (Ok(out), Some(Ok(err))) => out.dev() == err.dev() && out.ino() == err.ino(),
        (Ok(_), None) => false,
        _ => true,
    };
    if shared {
        return None;
    }
    pipe::Sender::from_owned_fd(OwnedFd::from(out)).ok()
}

/// One MCP session (newline-delimited JSON-RPC) over `io`, as `agent`,
/// until the peer closes it.
pub async fn serve_stream<S>(server: Server, agent: String, io: S) -> Result<(), McpError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let mut session = server.session(Some(agent));
    // The session's end is awaited here, so the caller sees its tasks
    // ended when this returns (not left to the handler's drop).
    session.end_on_drop = false;
    let id = session.id().to_owned();
    let (read, write) = tokio::io::split(io);
    let served = async {
        let running = session
            .serve(SessionTransport::new(read, write))
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Session(e.to_string()))
    }
    .await;
    server.end_session(&id).await;
    served.map(drop)
}
