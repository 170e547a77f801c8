//! Logs go to stderr (stdout carries results), filtered by `WARDEN_LOG`
//! (tracing-subscriber's env-filter syntax; default `warn`).

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_env("WARDEN_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
