#![allow(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577 in 2026-07-28, but older revisions use it and the issue requires it"
)]
//! A call's progress and log lines, forwarded to the MCP client: progress
//! as notifications/progress when the request carried a progress token,
//! log lines as notifications/message at or above the level the client
//! set. One forwarding task per call keeps them in order; the sink never
//! blocks the tool. A bridged server's form (`elicitation/create`) goes to
//! a client that declared elicitation, as a request of Warden's own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequestParams, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::Peer;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use warden_api::{BoxFuture, CallEvents, LogLevel};

/// At most this many events wait to be sent; beyond it they are dropped
/// (a tool cannot grow the host's memory by logging faster than the
/// client reads).
const QUEUE: usize = 1024;

enum Event {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// No level set: nothing is sent.
const OFF: u8 = u8::MAX;

/// The client's logging threshold, shared by a session's calls. Off until
/// the client sets a level with logging/setLevel.
#[derive(Debug, Clone)]
pub(crate) struct LogThreshold(Arc<AtomicU8>);

impl LogThreshold {
    pub fn off() -> LogThreshold {
        LogThreshold(Arc::new(AtomicU8::new(OFF)))
    }
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }
    pub fn is_off(&self) -> bool {
        self.0.load(Ordering::Relaxed) == OFF
    }
    fn admits(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.0.load(Ordering::Relaxed)
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Trace | LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warn => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
    }
}

/// The events sink of one call.
pub(crate) struct McpEvents {
    queue: mpsc::Sender<Event>,
    progress_token: Option<ProgressToken>,
    threshold: LogThreshold,
    /// The client, when it declared elicitation on a protocol revision
    /// where the server may send it `elicitation/create`.
    forms: Option<Peer<RoleServer>>,
}

impl std::fmt::Debug for McpEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEvents")
            .field("progress_token", &self.progress_token)
            .finish_non_exhaustive()
    }
}

impl McpEvents {
    /// Starts the forwarding task; it ends when the call drops the sink.
    /// Await the handle before answering the request, so every event
    /// reaches the client before the result.
    pub fn start(
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        threshold: LogThreshold,
        forms: bool,
    ) -> (Arc<McpEvents>, tokio::task::JoinHandle<()>) {
        let (queue, mut events) = mpsc::channel(QUEUE);
        let forms = forms.then(|| peer.clone());
        let forwarder = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let sent = match event {
                    Event::Progress(p) => peer.notify_progress(p).await,
                    Event::Log(l) => peer.notify_logging_message(l).await,
                };
                if sent.is_err() {
                    break;
                }
            }
        });
        let sink = Arc::new(McpEvents {
            queue,
            progress_token,
            threshold,
            forms,
        });
        (sink, forwarder)
    }
}

impl CallEvents for McpEvents {
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut p = ProgressNotificationParam::new(token.clone(), done);
        p.total = total;
        p.message = message.map(str::to_owned);
        let _ = self.queue.try_send(Event::Progress(p));
    }

    fn log(&self, level: LogLevel, source: &str, message: &str) {
        let level = mcp_level(level);
        if !self.threshold.admits(level) {
            return;
        }
        let mut l = LoggingMessageNotificationParam::new(level, json!(message));
        l.logger = Some(source.to_owned());
        let _ = self.queue.try_send(Event::Log(l));
    }

    fn elicit(&self, request: Value) -> BoxFuture<'_, Result<Value, String>> {
        Box::pin(async move {
            let Some(peer) = &self.forms else {
                return Err(
                    "the caller's client does not answer forms (it declared no elicitation)"
                        .to_owned(),
                );
            };
            let params: ElicitRequestParams = serde_json::from_value(request)
                .map_err(|e| format!("not an elicitation request: {e}"))?;
            let answer = peer
                .create_elicitation(params)
                .await
                .map_err(|e| format!("the client did not answer the form: {e}"))?;
            serde_json::to_value(answer).map_err(|e| e.to_string())
        })
    }
}
