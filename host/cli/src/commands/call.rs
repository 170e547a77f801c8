//! `warden call`: one call through the gate, the envelope on stdout.

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use warden_api::{CallContext, CallRequest, Grants, ToolHost};

use super::setup::{self, HostArgs};
use crate::{Outcome, grant_arg};

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call, e.g. `fs.read`.
    pub tool: String,
    #[command(flatten)]
    pub host: HostArgs,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Grant a directory: HOST_DIR[:GUEST_DIR][:ro|rw] (repeatable; read-only
    /// by default; the guest sees HOST_DIR at its own path unless GUEST_DIR
    /// is given).
    #[arg(long = "grant-fs", value_name = "SPEC")]
    pub grant_fs: Vec<String>,
    /// The agent the call is made as.
    #[arg(long, default_value = "cli")]
    pub agent: String,
}

pub fn run(args: CallArgs) -> anyhow::Result<Outcome> {
    let call_args: Value = serde_json::from_str(&args.args).context("--args is not valid JSON")?;
    let grants = Grants {
        fs: args
            .grant_fs
            .iter()
            .map(|g| grant_arg::parse_fs(g))
            .collect::<anyhow::Result<_>>()?,
    };
    let rt = setup::tokio()?;
    let envelope = rt.block_on(async {
        let runtime = args.host.runtime()?;
        let plugins = args.host.load(&runtime).await?;
        let gate = args.host.gate(&plugins, grants)?;
        let request = CallRequest {
            tool: args.tool.clone(),
            args: call_args,
            context: CallContext {
                agent: args.agent.clone(),
                session: format!("cli-{}", std::process::id()),
                task: None,
                request_id: "1".into(),
            },
        };
        anyhow::Ok(gate.call(request).await)
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
