//! `warden call`: one call through the gate, the envelope on stdout, its
//! decision and outcome in the audit chain of the state directory (by
//! default the per-user one, so that granting the working directory never
//! grants the host's own state).

use crate::out::out;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use warden_api::{CallContext, CallRequest, ToolHost};

use super::setup::{self, AgentArgs, HostArgs};
use crate::{Outcome, approver};

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call, e.g. `fs_read`.
    pub tool: String,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
}

pub fn run(mut args: CallArgs) -> anyhow::Result<Outcome> {
    let call_args: Value = serde_json::from_str(&args.args).context("--args is not valid JSON")?;
    // `--grant-fs "$PWD"` is the everyday call: keep the state out of it.
    args.host.per_user_state = true;
    let rt = setup::tokio()?;
    let envelope = rt.block_on(async {
        let host = args.host.load().await?;
        // Audited like a served call: decisions and outcomes go to the
        // signed chain in the state directory, and trust learns from it.
        let gate = host.call_gate(
            &args.agent.overrides(),
            setup::DEFAULT_AGENT,
            Arc::new(approver::Terminal::for_stdin()),
        )?;
        let request = CallRequest {
            tool: args.tool.clone(),
            args: call_args,
            context: CallContext {
                principal: None,
                agent: args.agent.agent.clone(),
                session: format!("cli-{}", std::process::id()),
                task: None,
                request_id: "1".into(),
            },
        };
        let envelope = gate.call(request).await;
        gate.flush_trust();
        gate.seal_audit();
        host.stop_sandbox().await;
        anyhow::Ok(envelope)
    })?;
    {
        out!("{}", envelope.to_json());
    }
    Ok(if envelope.is_ok() {
        Outcome::Ok
    } else {
        Outcome::CallFailed
    })
}
