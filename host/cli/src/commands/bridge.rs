//! `warden bridge list|status|approve|revoke|restart`: bridged MCP servers
//! of a running server, through its admin API (the definitions to approve
//! are the ones the running server listed).

use anyhow::bail;
use clap::{Args, Subcommand};
use serde_json::Value;
use warden_mcp::{AdminClient, PinBody};

use super::guardrail::GuardrailArgs;
use super::plugins::{Target, server};
use crate::Outcome;
use crate::out::out;

#[derive(Debug, Subcommand)]
pub enum BridgeCommand {
    /// Each bridged server: its state and how many tools it publishes.
    List(ListArgs),
    /// One server (or all): every listed tool, its advertised name,
    /// definition digest and whether it is published or why not, and the
    /// server's last stderr lines.
    Status(StatusArgs),
    /// Approve tools' definitions as the server lists them now (all of its
    /// tools when none are named); they are published at once. Needs
    /// --actor and --reason (audited).
    Approve(PinArgs),
    /// Remove approvals (all of the server's when no tool is named); the
    /// tools are withdrawn at once. Needs --actor, --confirm and --reason.
    Revoke(PinArgs),
    /// End the server's sessions and list its tools again.
    Restart(RestartArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The bridge's name (default: all).
    pub name: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Args)]
pub struct PinArgs {
    /// The bridge's name.
    pub name: String,
    /// Tools, by upstream or advertised name (default: all).
    pub tools: Vec<String>,
    #[command(flatten)]
    pub guardrail: GuardrailArgs,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Args)]
pub struct RestartArgs {
    pub name: String,
    #[command(flatten)]
    pub target: Target,
}

pub fn run(command: BridgeCommand) -> anyhow::Result<Outcome> {
    super::setup::tokio()?.block_on(async move {
        match command {
            BridgeCommand::List(args) => {
                let value = client(&args.target).await?.bridges(None).await?;
                if args.json {
                    print(&value);
                } else {
                    list(&value);
                }
            }
            BridgeCommand::Status(args) => {
                let value = client(&args.target)
                    .await?
                    .bridges(args.name.as_deref())
                    .await?;
                if args.json {
                    print(&value);
                } else {
                    status(&value);
                }
            }
            BridgeCommand::Approve(args) => pin(args, true).await?,
            BridgeCommand::Revoke(args) => pin(args, false).await?,
            BridgeCommand::Restart(args) => {
                let value = client(&args.target)
                    .await?
                    .bridge_restart(&args.name)
                    .await?;
                status(&serde_json::json!({ "bridges": [value["status"].clone()] }));
            }
        }
        Ok(Outcome::Ok)
    })
}

async fn client(target: &Target) -> anyhow::Result<AdminClient> {
    match server(target).await? {
        Some(client) => Ok(client),
        None => bail!(
            "no running Warden server answers (its admin socket is in the state directory); \
             bridged servers are managed in a running server"
        ),
    }
}

async fn pin(args: PinArgs, approve: bool) -> anyhow::Result<()> {
    let what = if approve { "approving" } else { "revoking" };
    let mut guardrail = args.guardrail.guardrail();
    // An approval adds what an operator reviewed; it needs no --confirm.
    if approve {
        guardrail.confirm = true;
    }
    guardrail.check(&format!("{what} tools of bridge `{}`", args.name))?;
    let body = PinBody {
        tools: args.tools,
        guardrail,
    };
    let value = client(&args.target)
        .await?
        .bridge_pins(&args.name, approve, &body)
        .await?;
    if approve {
        for tool in value["approved"].as_array().into_iter().flatten() {
            out!(
                "approved {} {}",
                tool["tool"].as_str().unwrap_or("?"),
                tool["digest"].as_str().unwrap_or("?")
            );
        }
    } else {
        out!("revoked {} pin(s)", value["revoked"]);
    }
    status(&serde_json::json!({ "bridges": [value["status"].clone()] }));
    Ok(())
}

fn print(value: &Value) {
    out!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

fn bridges(value: &Value) -> impl Iterator<Item = &Value> {
    value["bridges"].as_array().into_iter().flatten()
}

fn list(value: &Value) {
    let mut any = false;
    for b in bridges(value) {
        any = true;
        let tools = b["tools"].as_array().map_or(&[][..], Vec::as_slice);
        let published = tools.iter().filter(|t| t["state"] == "published").count();
        out!(
            "{}  {}  {}  {published} of {} tools published{}",
            b["name"].as_str().unwrap_or("?"),
            b["runtime"].as_str().unwrap_or("?"),
            b["state"].as_str().unwrap_or("?"),
            tools.len(),
            b["problem"]
                .as_str()
                .map(|p| format!("  ({p})"))
                .unwrap_or_default()
        );
    }
    if !any {
        out!("no bridged servers");
    }
}

fn status(value: &Value) {
    for b in bridges(value) {
        out!(
            "{} ({} runtime): {}",
            b["name"].as_str().unwrap_or("?"),
            b["runtime"].as_str().unwrap_or("?"),
            b["state"].as_str().unwrap_or("?")
        );
        if let Some(problem) = b["problem"].as_str() {
            out!("  problem: {problem}");
        }
        for t in b["tools"].as_array().into_iter().flatten() {
            out!(
                "  {:<32} {:<20} {}  {}",
                t["advertised"].as_str().unwrap_or("?"),
                t["state"].as_str().unwrap_or("?"),
                t["digest"].as_str().unwrap_or("?"),
                t["reason"].as_str().unwrap_or("")
            );
        }
        let sessions: Vec<&str> = b["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !sessions.is_empty() {
            out!("  sessions: {}", sessions.join(", "));
        }
        if let Some(stderr) = b["stderr"].as_str().filter(|s| !s.trim().is_empty()) {
            out!("  stderr (last lines):");
            let lines: Vec<&str> = stderr.lines().collect();
            for line in &lines[lines.len().saturating_sub(10)..] {
                out!("    {line}");
            }
        }
    }
}
