//! `warden tools list`: the tools an agent may use, each with the digest
//! of the definition a client is shown (what a definition pin records).

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
    let (tools, bridged) = rt.block_on(async {
        let host = args.host.load().await?;
        let bridged: Vec<String> = host.config.bridges.iter().map(|b| b.name.clone()).collect();
        let agents =
            warden_server::agents(&host.config, &args.agent.overrides(), setup::DEFAULT_AGENT)?;
        let gate = host
            .gate_builder(agents)?
            .approver(Arc::new(NoApprover))
            .build();
        anyhow::Ok((gate.list_tools(&args.agent.agent), bridged))
    })?;
    // What a pin on each tool's definition records: the digest of the
    // definition a client is shown in `tools/list`.
    let digests = tools
        .iter()
        .map(warden_mcp::spec_digest)
        .collect::<Result<Vec<_>, _>>()?;
    let text = if args.json {
        let listed = tools
            .iter()
            .zip(&digests)
            .map(|(t, digest)| {
                let mut entry = json!(t);
                entry["definition-digest"] = json!(digest);
                entry
            })
            .collect::<Vec<_>>();
        serde_json::to_string_pretty(&listed)?
    } else {
        tools
            .iter()
            .zip(&digests)
            .map(|(t, digest)| {
                let effect = if t.side_effect {
                    "side effects"
                } else {
                    "read-only"
                };
                // Short, as git shows commits; `--json` has it whole.
                let short = digest.get(..19).unwrap_or(digest);
                format!(
                    "{:<16} {:<14} {:<12} {:<12} {short}  {}",
                    t.name.to_string(),
                    t.category.to_string(),
                    t.action_type.to_string(),
                    effect,
                    t.summary
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    {
        out!("{text}");
    }
    // Bridged servers are listed by a running server, not here.
    if !bridged.is_empty() && !args.json {
        #[expect(clippy::print_stderr, reason = "a note beside the list, for people")]
        {
            eprintln!(
                "bridged servers ({}) are not listed here: a running `warden serve` lists their \
                 tools (`warden bridge status`)",
                bridged.join(", ")
            );
        }
    }
    Ok(Outcome::Ok)
}
