//! The `warden:tool/host` interface: log lines and progress from the guest,
//! attributed to the plugin, tool and request, and bounded so a plugin
//! cannot flood the host's logs.
//!
//! Attack: a guest emitting notifications in a loop (100,000 progress
//! updates) to flood the agent's client, the transport and the host's
//! memory. What reaches the caller is bounded per call: progress in
//! bursts of up to [`PROGRESS_BURST`], then one per [`PROGRESS_INTERVAL`],
//! and [`MAX_PROGRESS`] times in all; log lines [`MAX_RELAYED_LINES`]
//! times. The excess is counted and reported once when the call ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use warden_api::CallEvents;

use crate::bindings::{self, LogLevel};
use crate::state::HostState;

const MAX_LINES: u32 = 1000;
const MAX_LINE_BYTES: usize = 4096;
/// Progress notifications relayed per call, at most.
pub(crate) const MAX_PROGRESS: u32 = 100;
/// Progress notifications relayed at once before the rate applies.
pub(crate) const PROGRESS_BURST: u32 = 20;
/// Time that earns one more relayed progress notification.
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);
/// Log lines relayed to the caller per call, at most (the host's own log
/// keeps up to `MAX_LINES`).
pub(crate) const MAX_RELAYED_LINES: u32 = 100;

#[derive(Debug)]
pub(crate) struct HostApi {
    pub plugin: String,
    pub tool: String,
    pub request_id: String,
    lines: u32,
    /// The caller's sink for log lines and progress (an MCP client).
    events: Option<Arc<dyn CallEvents>>,
    progress_sent: u32,
    progress_dropped: u32,
    /// Notifications that may go now (a token bucket), and when it was
    /// last refilled.
    progress_tokens: f64,
    refilled: Option<Instant>,
}

impl HostApi {
    pub fn new(
        plugin: &str,
        tool: &str,
        request_id: &str,
        events: Option<Arc<dyn CallEvents>>,
    ) -> HostApi {
        HostApi {
            plugin: plugin.to_owned(),
            tool: tool.to_owned(),
            request_id: request_id.to_owned(),
            lines: 0,
            events,
            progress_sent: 0,
            progress_dropped: 0,
            progress_tokens: f64::from(PROGRESS_BURST),
            refilled: None,
        }
    }

    /// Lines the guest logged beyond the per-call allowance.
    pub fn dropped_lines(&self) -> u32 {
        self.lines.saturating_sub(MAX_LINES)
    }

    /// Whether a progress notification may go to the caller now.
    fn admit_progress(&mut self, now: Instant) -> bool {
        if let Some(then) = self.refilled {
            let earned = now.duration_since(then).as_secs_f64() / PROGRESS_INTERVAL.as_secs_f64();
            self.progress_tokens = (self.progress_tokens + earned).min(f64::from(PROGRESS_BURST));
        }
        self.refilled = Some(now);
        if self.progress_tokens >= 1.0 && self.progress_sent < MAX_PROGRESS {
            self.progress_tokens -= 1.0;
            self.progress_sent += 1;
            true
        } else {
            self.progress_dropped = self.progress_dropped.saturating_add(1);
            false
        }
    }

    /// Reports, once, what the call's limits kept from the caller.
    pub fn report_dropped(&self) {
        let lines = self.lines.saturating_sub(MAX_RELAYED_LINES);
        if self.progress_dropped == 0 && lines == 0 {
            return;
        }
        let text = format!(
            "`{}` sent {} progress notifications and {} log lines past what a call may relay \
             (progress: {MAX_PROGRESS} per call, bursts of {PROGRESS_BURST}, then one per {} ms; \
             log lines: {MAX_RELAYED_LINES}); they were not relayed",
            self.tool,
            self.progress_dropped,
            lines,
            PROGRESS_INTERVAL.as_millis()
        );
        tracing::warn!(plugin = %self.plugin, tool = %self.tool, request_id = %self.request_id, "{text}");
        if let Some(events) = &self.events {
            events.log(warden_api::LogLevel::Warn, "warden", &text);
        }
    }
}

fn clip(s: &str) -> &str {
    if s.len() <= MAX_LINE_BYTES {
        return s;
    }
    let mut end = MAX_LINE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn api_level(level: LogLevel) -> warden_api::LogLevel {
    match level {
        LogLevel::Trace => warden_api::LogLevel::Trace,
        LogLevel::Debug => warden_api::LogLevel::Debug,
        LogLevel::Info => warden_api::LogLevel::Info,
        LogLevel::Warn => warden_api::LogLevel::Warn,
        LogLevel::Error => warden_api::LogLevel::Error,
    }
}

impl bindings::warden::tool::host::Host for HostState {
    fn log(&mut self, level: LogLevel, message: String) {
        let h = &mut self.host;
        h.lines = h.lines.saturating_add(1);
        if h.lines > MAX_LINES {
            return;
        }
        let message = clip(&message);
        let (plugin, tool, request_id) = (&h.plugin, &h.tool, &h.request_id);
        if let Some(events) = &h.events
            && h.lines <= MAX_RELAYED_LINES
        {
            events.log(api_level(level), plugin, message);
        }
        match level {
            LogLevel::Trace => {
                tracing::trace!(target: "warden::plugin", plugin, tool, request_id, "{message}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "warden::plugin", plugin, tool, request_id, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "warden::plugin", plugin, tool, request_id, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "warden::plugin", plugin, tool, request_id, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "warden::plugin", plugin, tool, request_id, "{message}")
            }
        }
    }

    fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        let h = &mut self.host;
        if !h.admit_progress(Instant::now()) {
            return;
        }
        if let Some(events) = &h.events {
            events.progress(done, total, message.as_deref().map(clip));
        }
        tracing::debug!(
            target: "warden::progress",
            plugin = %h.plugin, tool = %h.tool, request_id = %h.request_id,
            done, total, message = message.as_deref().map(clip),
            "progress"
        );
    }

    fn denials(&mut self) -> Vec<String> {
        self.denials.all()
    }

    fn path_denied(&mut self, path: String) -> Option<String> {
        self.paths.as_ref()?.denied(&path)
    }
}

impl bindings::warden::tool::types::Host for HostState {}
