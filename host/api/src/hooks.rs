//! What a caller can attach to one call: someone to ask when the policy
//! asks, and a sink for the tool's progress and log lines (and, for a
//! bridged server, its forms). The MCP server fills both from its client;
//! the CLI leaves them empty.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Approver, BoxFuture};

/// The level of a log line, as plugins and the host emit them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// Receives what happens during one call, as it happens. Implementations
/// must not block: they hand the event on (to a channel, a log).
pub trait CallEvents: Send + Sync + fmt::Debug {
    /// The tool reports progress: `done` of `total` (when known).
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>);
    /// A log line from the tool (`source` is the plugin) or the host
    /// (`source` is `warden`).
    fn log(&self, level: LogLevel, source: &str, message: &str);

    /// Asks the person behind the caller's client to fill in a form for
    /// the tool (a bridged server's elicitation): `request` is the params
    /// object of an MCP `elicitation/create`, the answer an MCP elicitation
    /// result. `Err` says why the client cannot be asked; by default no
    /// client can.
    fn elicit(
        &self,
        request: serde_json::Value,
    ) -> BoxFuture<'_, Result<serde_json::Value, String>> {
        let _ = request;
        Box::pin(std::future::ready(Err(
            "the caller's client does not answer forms (it declared no elicitation)".to_owned(),
        )))
    }
}

/// The per-call attachments. `Default` attaches nothing: asks go to the
/// host's own approver and events only reach the host's log.
#[derive(Clone, Default)]
pub struct CallHooks {
    /// Asked instead of the host's approver when the policy asks.
    pub approver: Option<Arc<dyn Approver>>,
    pub events: Option<Arc<dyn CallEvents>>,
    /// How hard the caller says the call's task is, in 0..=1 (progressive
    /// trust weighs outcomes by it); `None`: the documented default.
    pub difficulty: Option<f64>,
}

impl fmt::Debug for CallHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHooks")
            .field("approver", &self.approver.is_some())
            .field("events", &self.events.is_some())
            .field("difficulty", &self.difficulty)
            .finish()
    }
}

impl CallHooks {
    /// Sends a log line to the events sink, if any; the line is only
    /// formatted when there is one (this runs on every call).
    pub fn log(&self, level: LogLevel, source: &str, message: fmt::Arguments<'_>) {
        if let Some(events) = &self.events {
            events.log(level, source, &message.to_string());
        }
    }
}
