//! `warden bench`: end-to-end figures on this machine (the measurements
//! are `warden_server::bench`).

use crate::out::out;
use anyhow::Context;
use clap::Args;

use super::setup::{self, HostArgs};
use crate::Outcome;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Sequential calls to time.
    #[arg(long, default_value_t = 2000)]
    pub iterations: usize,
    /// Concurrent callers for the throughput run.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also measure a real `warden serve` child over stdio and HTTP.
    #[arg(long)]
    pub mcp: bool,
    /// With --mcp: a bare MCP server (e.g. rmcp's, built by `cargo build
    /// --release -p warden-mcp --example bare_rmcp`) whose stdio `ping` is
    /// timed beside Warden's.
    #[arg(long, value_name = "PATH", requires = "mcp")]
    pub floor_server: Option<std::path::PathBuf>,
    /// With --mcp: a PostgreSQL database of its own (a URL) for a second
    /// served host, whose stdio fs_read is timed beside the SQLite host's.
    #[arg(long, value_name = "URL", requires = "mcp")]
    pub postgres: Option<String>,
    /// Measure the MCP bridge instead, against this fixture server
    /// (`cargo build --release -p warden-bridge-fixture`): a bridged no-op
    /// call beside a direct one, list-change notices, and calls beside a
    /// slow server.
    #[arg(long, value_name = "PATH", conflicts_with = "mcp")]
    pub bridge: Option<std::path::PathBuf>,
    /// With --bridge: the fixture's Docker image (with
    /// `warden-bridge-fixture` on its PATH), to measure the Docker runtime
    /// too.
    #[arg(long, value_name = "IMAGE", requires = "bridge")]
    pub bridge_image: Option<String>,
    /// Measure the toolsmith instead: versions of a ten-case blueprint for
    /// this prebuilt component validated and activated by a served host,
    /// to the client's list change. The component is the `gen-words` test
    /// component: `cargo build --release --target wasm32-wasip2` in
    /// `tests/components` makes
    /// `tests/components/target/wasm32-wasip2/release/warden_gen_words.wasm`.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["mcp", "bridge"])]
    pub toolsmith: Option<std::path::PathBuf>,
    /// With --toolsmith: how many versions to measure (after a warm-up).
    #[arg(long, default_value_t = 20, requires = "toolsmith")]
    pub versions: usize,
}

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    if let Some(fixture) = &args.bridge {
        let warden = std::env::current_exe().context("locating the warden binary")?;
        let report = setup::tokio()?.block_on(warden_server::bench::bridge::run(
            &warden,
            fixture,
            args.bridge_image.as_deref(),
            args.iterations,
        ))?;
        out!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Outcome::Ok);
    }
    if let Some(component) = &args.toolsmith {
        let warden = std::env::current_exe().context("locating the warden binary")?;
        let report = setup::tokio()?.block_on(warden_server::bench::toolsmith::run(
            &warden,
            component,
            args.versions,
        ))?;
        out!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Outcome::Ok);
    }
    let options = warden_server::bench::BenchOptions {
        host: args.host.options(args.host.config()?)?,
        iterations: args.iterations,
        concurrency: args.concurrency,
        mcp: if args.mcp {
            Some(std::env::current_exe().context("locating the warden binary")?)
        } else {
            None
        },
        floor: args.floor_server,
        postgres: args.postgres,
    };
    let report = setup::tokio()?.block_on(warden_server::bench::run(&options))?;
    let text = if args.json {
        serde_json::to_string_pretty(&report)?
    } else {
        warden_server::bench::render(&report)
    };
    {
        out!("{text}");
    }
    Ok(Outcome::Ok)
}
