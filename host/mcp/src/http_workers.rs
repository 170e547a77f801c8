//! The HTTP listener's connections, each served whole on one of a few
//! single-threaded runtimes (one per core).
//!
//! Why not tokio's multi-threaded runtime: there a request hops between
//! workers. The connection's task, rmcp's session and request tasks and
//! the call's own wake-ups each may wake the idle worker, which steals
//! the next step onto another, cold core; a served call paid about four
//! thread switches where one thread pays none. On two cores a served
//! `fs_read` of 1 B took 314 µs (p50) that way and 165 µs on a worker;
//! `ping` 76 and 59 µs (medians of five alternated runs).
//!
//! So the listener accepts on the host's runtime and hands each
//! connection to one worker thread, dealt in turn. Everything a request
//! does — its session, the gate, the call, the answer — runs on that
//! thread, and the plugin runtime makes spare instances and retires
//! stores after the answer there, as it does for a stdio session. Each
//! connection polls busily for a moment after it answered
//! (`busy_poll.rs`). A session reached over another connection is
//! reached through rmcp's channels, as before. A long guest call yields
//! to the other connections on its thread at every epoch tick.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::McpError;
use crate::busy_poll::BusyPoll;

/// A connection the listener accepted, for a worker to serve.
type Accepted = (std::net::TcpStream, SocketAddr);

/// The worker threads, each with its own runtime and queue of handed
/// connections.
pub(crate) struct Workers {
    queues: Vec<mpsc::UnboundedSender<Accepted>>,
    done: Vec<oneshot::Receiver<std::io::Result<()>>>,
    next: usize,
}

/// How many workers serve connections: `configured`, else one per core
/// the process may use.
fn count(configured: Option<NonZeroUsize>) -> usize {
    configured
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
}

impl Workers {
    /// Starts `threads` workers (one per core when `None`), each serving
    /// `app` on the connections it is handed until `stop` is cancelled
    /// and its connections have closed (as `axum::serve` does with
    /// graceful shutdown).
    pub fn start(
        app: &Router,
        local: SocketAddr,
        threads: Option<NonZeroUsize>,
        busy_poll: Duration,
        stop: &CancellationToken,
    ) -> Result<Workers, McpError> {
        let mut workers = Workers {
            queues: Vec::new(),
            done: Vec::new(),
            next: 0,
        };
        for n in 0..count(threads) {
            let starting = |e: std::io::Error| {
                McpError::Io(std::io::Error::new(
                    e.kind(),
                    format!("starting HTTP worker thread {n}: {e}"),
                ))
            };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(starting)?;
            let (queue, handed) = mpsc::unbounded_channel();
            let (finished, done) = oneshot::channel();
            let (app, stop) = (app.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("warden-http-{n}"))
                .spawn(move || {
                    let listener = Handed {
                        handed,
                        local,
                        busy_poll,
                    };
                    let served = runtime.block_on(async move {
                        axum::serve(listener, app)
                            .with_graceful_shutdown(stop.cancelled_owned())
                            .await
                    });
                    // What the connections left behind (a session's
                    // clean-up) gets a moment; then the runtime goes.
                    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
                    let _ = finished.send(served);
                })
                .map_err(starting)?;
            workers.queues.push(queue);
            workers.done.push(done);
        }
        Ok(workers)
    }

    /// Accepts on `listener` until `stop` is cancelled, handing each
    /// connection to the next worker; then waits for the workers.
    pub async fn serve(
        mut self,
        listener: TcpListener,
        stop: CancellationToken,
    ) -> Result<(), McpError> {
        loop {
            let accepted = tokio::select! {
                () = stop.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((tcp, peer)) => self.hand(tcp, peer),
                Err(e) if is_connection_error(&e) => {}
                Err(e) => {
                    // Out of descriptors, for one: accepting again at once
                    // would spin.
                    tracing::error!(error = %e, "accepting a connection failed; retrying in a second");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
        drop(listener);
        let Workers { queues, done, .. } = self;
        drop(queues);
        let mut result = Ok(());
        for worker in done {
            match worker.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = Err(McpError::Io(e)),
                Err(_) => {
                    result = Err(McpError::Io(std::io::Error::other(
                        "an HTTP worker thread ended without a result",
                    )));
                }
            }
        }
        result
    }

    fn hand(&mut self, tcp: tokio::net::TcpStream, peer: SocketAddr) {
        // Small JSON-RPC messages: without TCP_NODELAY, Nagle and delayed
        // ACKs add ~40 ms to each exchange on a keep-alive connection.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        // Off this runtime's reactor, to be registered with the worker's.
        let tcp = match tcp.into_std() {
            Ok(tcp) => tcp,
            Err(e) => {
                tracing::debug!(error = %e, %peer, "a connection could not be handed to a worker");
                return;
            }
        };
        let n = self.next % self.queues.len().max(1);
        self.next = self.next.wrapping_add(1);
        if let Some(queue) = self.queues.get(n)
            && queue.send((tcp, peer)).is_err()
        {
            tracing::error!(worker = n, %peer, "an HTTP worker has stopped; the connection is closed");
        }
    }
}

/// Errors of one connection, not of the listener: the next accept may
/// well succeed.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

/// A worker's side of the hand-over, as `axum::serve` accepts from it.
struct Handed {
    handed: mpsc::UnboundedReceiver<Accepted>,
    local: SocketAddr,
    busy_poll: Duration,
}

impl axum::serve::Listener for Handed {
    type Io = BusyPoll<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            // The listener stopped: nothing more comes, and the graceful
            // shutdown ends this worker's serving.
            let Some((tcp, peer)) = self.handed.recv().await else {
                return std::future::pending().await;
            };
            match tokio::net::TcpStream::from_std(tcp) {
                Ok(io) => return (BusyPoll::new(io, self.busy_poll), peer),
                Err(e) => {
                    tracing::debug!(error = %e, %peer, "a handed connection could not be registered");
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
