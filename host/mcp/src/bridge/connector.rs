//! How a bridge reaches its server: a connector makes one connection per
//! upstream session (a byte stream each way carrying newline-delimited
//! JSON-RPC, or a Streamable HTTP session), and a handle that ends the
//! process behind it. The host runtime's and HTTP connectors are in this
//! crate (`host_process.rs`, `http.rs`); the Docker runtime's comes from
//! the sandbox crate, through the same trait.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncWrite};
use warden_api::BoxFuture;

/// The server's output, read by the bridge.
pub type Reader = Box<dyn AsyncRead + Send + Unpin>;
/// The server's input, written by the bridge.
pub type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// How the MCP messages of a session travel.
pub enum Link {
    /// A process's stdout and stdin.
    Stream { read: Reader, write: Writer },
    /// Streamable HTTP, with a client Warden built (see `http.rs`).
    Http(super::http::HttpLink),
}

/// One live connection to a server.
pub struct Connection {
    pub link: Link,
    /// Ends whatever runs the server when the session ends.
    pub process: Box<dyn Process>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Link::Stream { .. } => "Link::Stream",
            Link::Http(_) => "Link::Http",
        })
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("process", &self.process.describe())
            .finish_non_exhaustive()
    }
}

/// The process (or container) behind a connection.
pub trait Process: Send + Sync {
    /// Ends it: asks politely, then kills, within a bounded time. Also
    /// ends whatever it started (its process group, its container).
    fn shutdown(&mut self) -> BoxFuture<'_, ()>;

    /// What to call it in logs and status (`pid 1234`, a container id).
    fn describe(&self) -> String;
}

/// Makes connections to one server.
pub trait Connector: Send + Sync {
    /// Starts the server for the upstream session `session` (an agent's
    /// name, or `shared`) and connects to it.
    fn connect<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Connection, String>>;

    /// The runtime, for status: `host`, `docker`.
    fn runtime(&self) -> &'static str;
}

/// The last bytes a server wrote to stderr: a bounded ring, so a server
/// that floods stderr costs a fixed amount of memory and never blocks
/// (whoever reads its stderr drains it continuously into this).
#[derive(Debug)]
pub struct StderrLog {
    capacity: usize,
    bytes: Mutex<VecDeque<u8>>,
    /// Secret values, replaced in [`StderrLog::tail`].
    secrets: Vec<(String, String)>,
}

impl StderrLog {
    pub fn new(capacity: usize, secrets: Vec<(String, String)>) -> StderrLog {
        StderrLog {
            capacity,
            bytes: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
            secrets,
        }
    }

    pub fn push(&self, chunk: &[u8]) {
        let mut bytes = self
            .bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let chunk = &chunk[chunk.len().saturating_sub(self.capacity)..];
        let overflow = (bytes.len() + chunk.len()).saturating_sub(self.capacity);
        bytes.drain(..overflow);
        bytes.extend(chunk);
    }

    /// How many bytes are kept now.
    pub fn len(&self) -> usize {
        self.bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The kept bytes as text, secret values redacted.
    pub fn tail(&self) -> String {
        let bytes: Vec<u8> = self
            .bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .copied()
            .collect();
        super::scrub::scrub_text(&String::from_utf8_lossy(&bytes), &self.secrets)
    }
}

#[cfg(test)]
mod tests {
    use super::StderrLog;

    #[test]
    fn the_log_keeps_the_last_bytes_and_redacts_secrets() {
        let log = StderrLog::new(16, vec![("TOKEN".into(), "hunter2".into())]);
        log.push(b"0123456789");
        log.push(b"abcdefghij");
        assert_eq!(log.len(), 16);
        assert_eq!(log.tail(), "456789abcdefghij");
        log.push(&[b'x'; 100]);
        assert_eq!(log.tail(), "x".repeat(16));
        log.push(b"pw=hunter2");
        assert!(
            log.tail().ends_with("pw=[redacted:TOKEN]"),
            "{}",
            log.tail()
        );
    }
}
