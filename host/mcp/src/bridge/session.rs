//! One upstream session: a connection from a connector, the MCP handshake
//! over it, and the process behind it, ended together.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::{Peer, RunningService, ServiceExt};
use tokio::sync::Mutex;

use super::client::{BridgeClient, InOrder};
use super::connector::{Connector, Link, Process};
use super::lines::Lines;

/// How many times a session is tried before a call or a listing fails,
/// and the waits between tries.
const BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(1)];

/// How long ending a session may take before its process is killed.
const SHUTDOWN: Duration = Duration::from_secs(10);

/// A connected, initialised session.
pub(crate) struct Live {
    pub service: Mutex<Option<RunningService<RoleClient, BridgeClient>>>,
    pub peer: Peer<RoleClient>,
    pub client: BridgeClient,
    process: Mutex<Option<Box<dyn Process>>>,
    pub describe: String,
    opened: Instant,
    /// Milliseconds since `opened` of the last use.
    last_used: AtomicU64,
}

impl Live {
    /// Connects and initialises, retrying a failed start with backoff.
    pub async fn open(
        connector: &dyn Connector,
        key: &str,
        client: BridgeClient,
        timeout: Duration,
        max_line: usize,
    ) -> Result<Live, String> {
        let mut last = String::new();
        for attempt in 0..=BACKOFF.len() {
            if attempt > 0 {
                tokio::time::sleep(BACKOFF[attempt - 1]).await;
            }
            match Self::open_once(connector, key, client.clone(), timeout, max_line).await {
                Ok(live) => return Ok(live),
                Err(e) => {
                    tracing::warn!(session = key, attempt = attempt + 1, error = %e, "a bridged server did not start");
                    last = e;
                }
            }
        }
        Err(last)
    }

    async fn open_once(
        connector: &dyn Connector,
        key: &str,
        client: BridgeClient,
        timeout: Duration,
        max_line: usize,
    ) -> Result<Live, String> {
        let connection = connector.connect(key).await?;
        let mut process = connection.process;
        let describe = process.describe();
        let started = match connection.link {
            Link::Stream { read, write } => {
                let transport = InOrder::new(Lines::new(read, write, max_line), &client);
                tokio::time::timeout(timeout, client.clone().serve(transport)).await
            }
            Link::Http(http) => {
                let transport = InOrder::new(http.0, &client);
                tokio::time::timeout(timeout, client.clone().serve(transport)).await
            }
        };
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                process.shutdown().await;
                return Err(format!(
                    "the MCP handshake failed: {}",
                    without_type_names(&e.to_string())
                ));
            }
            Err(_) => {
                process.shutdown().await;
                return Err(format!(
                    "the server did not answer `initialize` within {} ms",
                    timeout.as_millis()
                ));
            }
        };
        Ok(Live {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            client,
            process: Mutex::new(Some(process)),
            describe,
            opened: Instant::now(),
            last_used: AtomicU64::new(0),
        })
    }

    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    pub fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_used.store(now, Ordering::Relaxed);
    }

    /// How long since the session was last used.
    pub fn idle(&self) -> Duration {
        self.opened.elapsed().saturating_sub(Duration::from_millis(
            self.last_used.load(Ordering::Relaxed),
        ))
    }

    /// Ends the session: closes the MCP service (which closes the
    /// server's input), then ends the process, all within a bound.
    pub async fn close(self: Arc<Self>) {
        let service = self.service.lock().await.take();
        let process = self.process.lock().await.take();
        let end = async move {
            if let Some(mut service) = service {
                let _ = service.close_with_timeout(Duration::from_secs(3)).await;
            }
            if let Some(mut process) = process {
                process.shutdown().await;
            }
        };
        if tokio::time::timeout(SHUTDOWN, end).await.is_err() {
            tracing::warn!(session = %self.describe, "a bridged server did not end in time");
        }
    }
}

/// rmcp's transport errors name the transport's Rust type in brackets
/// (`Transport [rmcp::transport::worker::WorkerTransport<...>] error: HTTP
/// 502`); an operator needs the error, not the type.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        if rest[open..close].contains("::") {
            out.push_str(rest[..open].trim_end());
            rest = &rest[close + 1..];
        } else {
            out.push_str(&rest[..=close]);
            rest = &rest[close + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn type_names_are_left_out_of_errors() {
        assert_eq!(
            super::without_type_names(
                "Send message error Transport [rmcp::transport::worker::WorkerTransport<a::B<c::D>>] error: HTTP 502, when send initialize request"
            ),
            "Send message error Transport error: HTTP 502, when send initialize request"
        );
        assert_eq!(
            super::without_type_names("list [a, b] ok"),
            "list [a, b] ok"
        );
    }
}
