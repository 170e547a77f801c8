//! `warden policy check`: what the policy decides for a described call,
//! as JSON (the check is `warden_server::policy_check`).

use crate::out::out;
use clap::Args;
use serde_json::json;
use warden_server::Config;

use super::setup::AgentArgs;
use crate::Outcome;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The tool, e.g. `terminal_exec`.
    #[arg(long)]
    pub tool: String,
    /// The call's arguments (JSON); the specifier is rendered from them
    /// with --template.
    #[arg(long, value_name = "JSON", conflicts_with = "specifier")]
    pub args: Option<String>,
    /// The specifier as the policy sees it, e.g. `npm run build`.
    #[arg(long, value_name = "STR")]
    pub specifier: Option<String>,
    /// The tool's specifier template, for --args (default `{path}` for
    /// file-system tools, `{command}` for terminal tools).
    #[arg(long, value_name = "TEMPLATE")]
    pub template: Option<String>,
    /// The tool's category (default: guessed from the name: fs_* is
    /// file-system, terminal_* terminal, ...).
    #[arg(long)]
    pub category: Option<String>,
    /// The tool's action type (default from the category).
    #[arg(long)]
    pub action: Option<String>,
    /// The tool has side effects.
    #[arg(long)]
    pub side_effect: bool,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// A warden.toml whose agents, levels and rules apply. Without it only
    /// the rules and mode given here apply: no level gating.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The workspace root, as the agent's paths name it.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// The directory relative paths resolve against (default: the workspace).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Print JSON (the default; kept for scripts that pass it).
    #[arg(long)]
    pub json: bool,
}

pub fn check(args: CheckArgs) -> anyhow::Result<Outcome> {
    let call = warden_server::policy_check::DescribedCall {
        tool: args.tool.clone(),
        category: args.category.clone(),
        action: args.action.clone(),
        side_effect: args.side_effect,
        specifier: args.specifier.clone(),
        args: match &args.args {
            Some(json) => Some(
                serde_json::from_str(json)
                    .map_err(|e| anyhow::anyhow!("--args is not valid JSON: {e}"))?,
            ),
            None => None,
        },
        template: args.template.clone(),
    };
    let as_ = warden_server::policy_check::CheckedAs {
        config: args.config.as_deref().map(Config::load).transpose()?,
        overrides: args.agent.overrides(),
        builtin: super::setup::DEFAULT_AGENT.into(),
        workspace: args.workspace.clone(),
        cwd: args.cwd.clone(),
    };
    let d = warden_server::policy_check::check(&call, &as_)?;
    {
        out!(
            "{}",
            json!({"decision": d.decision, "reason": d.reason, "rule": d.rule, "layer": d.layer})
        );
    }
    Ok(Outcome::Ok)
}
