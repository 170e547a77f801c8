//! `warden`: the command-line interface.
//!
//! Owns: argument parsing, output formatting, process setup (logging,
//! signals, the async runtime), the terminal approver of `warden call`,
//! and exit codes (0 ok, 1 a tool error or denial, 2 a usage or load
//! error). Everything a host does is `warden-server`'s; this crate calls
//! it. The only library user of `anyhow` (with xtask and tests).

mod approver;
mod commands;
mod logging;
mod out;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Every call allocates and frees across the runtime's threads (JSON,
/// the wasm store, the audit record); glibc's allocator spent a tenth of
/// a served call's CPU there under concurrent calls (`warden bench --mcp`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "warden",
    version,
    about = "A tool host for AI agents: WebAssembly tools, explicit grants, nothing ambient"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one tool call and print its result envelope as JSON.
    Call(commands::call::CallArgs),
    /// Work with plugin components.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Test rules: what the policy decides for a call.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// The tools an agent may use.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// The configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Serve MCP over stdio (default) or Streamable HTTP.
    Serve(commands::serve::ServeArgs),
    /// Answer approvals waiting in a running server.
    #[command(subcommand)]
    Approvals(commands::approvals::ApprovalsCommand),
    /// Read and verify the signed audit chain in a state directory.
    #[command(subcommand)]
    Audit(commands::audit::AuditCommand),
    /// Time-boxed capability grants in a state directory.
    #[command(subcommand)]
    Grants(commands::grants::GrantsCommand),
    /// Progressive trust: show, rate, approve a promotion.
    #[command(subcommand)]
    Trust(commands::trust::TrustCommand),
    /// The toolsmith: capability gaps no tool serves.
    #[command(subcommand)]
    Toolsmith(commands::toolsmith::ToolsmithCommand),
    /// Bridged MCP servers of a running server: status, approve and
    /// revoke their tools' definitions, restart.
    #[command(subcommand)]
    Bridge(commands::bridge::BridgeCommand),
    /// Docker sandboxes: build their images.
    #[command(subcommand)]
    Sandbox(commands::sandbox::SandboxCommand),
    /// Measure end-to-end figures (call latency percentiles, load times).
    Bench(commands::bench::BenchArgs),
    /// Make a publisher key pair: KEYFILE (secret, 0600) and KEYFILE.pub.
    Keygen(commands::keys::KeygenArgs),
    /// Sign a plugin component: writes COMPONENT.sig.
    Sign(commands::keys::SignArgs),
    /// Check a component's signature against trust roots (exit 0 with the
    /// signer, 1 with the failed check).
    Verify(commands::keys::VerifyArgs),
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Print the decision for a call as JSON: {"decision","reason","rule","layer"}.
    Check(commands::policy::CheckArgs),
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
    /// List the tools an agent may use, sorted by name.
    List(commands::tools::ListArgs),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the JSON Schema of warden.toml.
    Schema,
    /// Parse and compile a warden.toml, reporting the first problem with its key path.
    Check {
        /// The file.
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Show a plugin's tools, schemas, requested capabilities and digest
    /// without running any of its code.
    Inspect(commands::inspect::InspectArgs),
    /// Install a signed component (or a directory of them) into the state
    /// directory, or into the running server.
    Install(commands::plugins::InstallArgs),
    /// Remove an installed plugin.
    Remove(commands::plugins::RemoveArgs),
    /// The installed plugins: versions, digests, signers, tools.
    List(commands::plugins::ListArgs),
}

/// How a command ended.
#[derive(Debug)]
pub enum Outcome {
    Ok,
    /// The call ran and failed (tool error, limit, denial), or a check
    /// (`warden verify`) refused.
    CallFailed,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init();
    let result = match cli.command {
        Command::Call(args) => commands::call::run(args),
        Command::Plugin(PluginCommand::Inspect(args)) => commands::inspect::run(args),
        Command::Policy(PolicyCommand::Check(args)) => commands::policy::check(args),
        Command::Tools(ToolsCommand::List(args)) => commands::tools::list(args),
        Command::Config(ConfigCommand::Schema) => commands::config::schema(),
        Command::Config(ConfigCommand::Check { file }) => commands::config::check(&file),
        Command::Bench(args) => commands::bench::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Approvals(command) => commands::approvals::run(command),
        Command::Audit(command) => commands::audit::run(command),
        Command::Grants(command) => commands::grants::run(command),
        Command::Trust(command) => commands::trust::run(command),
        Command::Toolsmith(command) => commands::toolsmith::run(command),
        Command::Plugin(PluginCommand::Install(args)) => commands::plugins::install(args),
        Command::Plugin(PluginCommand::Remove(args)) => commands::plugins::remove(args),
        Command::Plugin(PluginCommand::List(args)) => commands::plugins::list(args),
        Command::Bridge(command) => commands::bridge::run(command),
        Command::Keygen(args) => commands::keys::keygen(args),
        Command::Sign(args) => commands::keys::sign(args),
        Command::Verify(args) => commands::keys::verify(args),
        Command::Sandbox(command) => commands::sandbox::run(command),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::CallFailed) => ExitCode::from(1),
        Err(e) => {
            #[expect(clippy::print_stderr, reason = "the CLI reports errors on stderr")]
            {
                eprintln!("error: {}", out::causes(e.as_ref()));
            }
            ExitCode::from(2)
        }
    }
}
