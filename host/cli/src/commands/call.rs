//! `warden call`: one call through the gate, the envelope on stdout.

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use warden_api::{CallContext, CallRequest, ToolHost};

use super::setup::{self, AgentArgs, HostArgs};
use crate::{Outcome, approver};

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call, e.g. `fs.read`.
    pub tool: String,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
}

pub fn run(args: CallArgs) -> anyhow::Result<Outcome> {
    let call_args: Value = serde_json::from_str(&args.args).context("--args is not valid JSON")?;
    let rt = setup::tokio()?;
    let envelope = rt.block_on(async {
        let host = args.host.load().await?;
        let gate = host.gate(&args.agent, Arc::new(approver::Terminal::for_stdin()))?;
        let request = CallRequest {
            tool: args.tool.clone(),
            args: call_args,
            context: CallContext {
                agent: args.agent.agent.clone(),
                session: format!("cli-{}", std::process::id()),
                task: None,
                request_id: "1".into(),
            },
        };
        let envelope = gate.call(request).await;
        host.stop_sandbox().await;
        anyhow::Ok(envelope)
    })?;
    #[expect(clippy::print_stdout, reason = "the envelope is this command's output")]
    {
        println!("{}", envelope.to_json());
    }
    Ok(if envelope.is_ok() {
        Outcome::Ok
    } else {
        Outcome::CallFailed
    })
}
