//! The `warden:tool/host` interface: log lines and progress from the guest,
//! attributed to the plugin, tool and request, and bounded so a plugin
//! cannot flood the host's logs.

use std::sync::Arc;

use warden_api::CallEvents;

use crate::bindings::{self, LogLevel};
use crate::state::HostState;

const MAX_LINES: u32 = 1000;
const MAX_LINE_BYTES: usize = 4096;

#[derive(Debug)]
pub(crate) struct HostApi {
    pub plugin: String,
    pub tool: String,
    pub request_id: String,
    lines: u32,
    /// The caller's sink for log lines and progress (an MCP client).
    events: Option<Arc<dyn CallEvents>>,
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
        }
    }

    /// Lines the guest logged beyond the per-call allowance.
    pub fn dropped_lines(&self) -> u32 {
        self.lines.saturating_sub(MAX_LINES)
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
        if let Some(events) = &h.events {
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
        let h = &self.host;
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
