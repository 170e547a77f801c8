//! `warden serve`: the MCP server over stdio or Streamable HTTP, with the
//! admin API on a socket in the state directory. The host itself is
//! `warden_server::Host`; this parses the options and handles signals.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;
use warden_server::{Host, SERVE_AGENT, ServeOptions};

use super::setup::{self, HostArgs};
use crate::Outcome;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve one MCP session on stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:7878) under `/mcp`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// The agent of the stdio session, and of HTTP requests when no tokens
    /// are configured (loopback only).
    #[arg(long, default_value = SERVE_AGENT)]
    pub agent: String,
    /// Override that agent's mode: default, plan, accept-edits, autonomous.
    #[arg(long, value_parser = setup::parse_mode)]
    pub mode: Option<warden_policy::Mode>,
    /// Where the bundled plugins are (used without a config).
    #[arg(long, value_name = "DIR", env = "WARDEN_PLUGIN_DIR")]
    pub plugin_dir: Option<PathBuf>,
    /// Watch DIR for plugin components (`*.wasm` with `.sig` beside):
    /// new and changed ones load, removed ones unload, without a restart.
    #[arg(long, value_name = "DIR")]
    pub watch: Option<PathBuf>,
    /// How often --watch looks, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub watch_interval_ms: u64,
    #[command(flatten)]
    pub host: HostArgs,
}

pub fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    // HTTP serves many clients at once: its connections run on worker
    // threads of their own (one per core, each single-threaded), and this
    // runtime accepts them and runs the host's ticks. stdio serves one.
    let runtime = match args.http {
        Some(_) => setup::tokio()?,
        None => setup::tokio_single()?,
    };
    let outcome = runtime.block_on(serve(args));
    // The host has shut down. A read of stdin still holds a thread of the
    // runtime until the client writes or closes it, so waiting for it
    // would keep a stopped host (a signal, a failed load) alive.
    runtime.shutdown_timeout(Duration::from_millis(100));
    outcome
}

async fn serve(args: ServeArgs) -> anyhow::Result<Outcome> {
    let config = warden_server::choose_config(
        args.host.config.as_deref(),
        args.plugin_dir.as_deref(),
        args.host.plugins.is_empty(),
    )?;
    let mut options = ServeOptions::new(args.host.options(config)?);
    options.agent = args.agent.clone();
    options.mode = args.mode;
    options.watch = args
        .watch
        .clone()
        .map(|dir| (dir, Duration::from_millis(args.watch_interval_ms)));
    let host = Host::begin(options).await?;
    if host.config().signers.insecure_allow_unsigned {
        #[expect(
            clippy::print_stderr,
            reason = "a warning the operator must see at every start"
        )]
        {
            eprintln!("warden: WARNING: insecure-allow-unsigned is set; unsigned plugins load");
        }
    }
    tokio::spawn(shutdown_signal(host.shutdown_token()));
    let socket = host.admin_socket().to_path_buf();
    let result = match args.http {
        Some(addr) => host
            .serve_http(addr, |bound| {
                #[expect(clippy::print_stderr, reason = "tells the operator where to connect")]
                {
                    eprintln!(
                        "warden: serving MCP at http://{bound}/mcp (admin socket {})",
                        socket.display()
                    );
                }
            })
            .await
            .context("the HTTP server"),
        None => host.serve_stdio().await.context("the stdio session"),
    };
    host.shutdown().await;
    result.map(|()| Outcome::Ok)
}

async fn shutdown_signal(token: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        let _ = ctrl_c.await;
        token.cancel();
        return;
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
    token.cancel();
}
