//! `warden tools list`: the tools an agent may use.

use crate::out::out;
use std::sync::Arc;

use clap::Args;
use serde_json::json;
use warden_api::ToolHost;
use warden_gate::NoApprover;

use super::setup::{self, AgentArgs, HostArgs};
use crate::Outcome;

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn list(args: ListArgs) -> anyhow::Result<Outcome> {
    let rt = setup::tokio()?;
    let tools = rt.block_on(async {
        let host = args.host.load().await?;
        let agents =
            warden_server::agents(&host.config, &args.agent.overrides(), setup::DEFAULT_AGENT)?;
        let gate = host
            .gate_builder(agents)?
            .approver(Arc::new(NoApprover))
            .build();
        anyhow::Ok(gate.list_tools(&args.agent.agent))
    })?;
    let text = if args.json {
        serde_json::to_string_pretty(&json!(tools))?
    } else {
        tools
            .iter()
            .map(|t| {
                let effect = if t.side_effect {
                    "side effects"
                } else {
                    "read-only"
                };
                format!(
                    "{:<16} {:<14} {:<12} {:<12} {}",
                    t.name, t.category, t.action_type, effect, t.summary
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    {
        out!("{text}");
    }
    Ok(Outcome::Ok)
}
