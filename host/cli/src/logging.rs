//! Logs go to stderr (stdout carries results), filtered by `WARDEN_LOG`
//! (tracing-subscriber's env-filter syntax; default `warn`).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_env("WARDEN_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never in log files.
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
