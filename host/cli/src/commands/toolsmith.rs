//! `warden toolsmith gaps`: the capability gaps of a state directory (or
//! its PostgreSQL database): every `domain:action` asked for within the
//! configured window that no tool serves, with how often, from how many
//! sessions and agents, and whether it is recurring.

use crate::out::out;
use std::path::PathBuf;

use clap::Subcommand;
use warden_server::Config;

use super::audit::StateDir;
use crate::Outcome;

#[derive(Debug, Subcommand)]
pub enum ToolsmithCommand {
    /// The capability gaps within the window (JSON).
    Gaps {
        /// Only the recurring ones.
        #[arg(long)]
        recurring: bool,
        /// The configuration with the `[toolsmith]` rule (default:
        /// ./warden.toml when present, else the defaults).
        #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        state: StateDir,
    },
}

pub fn run(command: ToolsmithCommand) -> anyhow::Result<Outcome> {
    match command {
        ToolsmithCommand::Gaps {
            recurring,
            config,
            state,
        } => {
            let path =
                config.or_else(|| Some(PathBuf::from("warden.toml")).filter(|p| p.is_file()));
            let toolsmith = match path {
                Some(p) => Config::load(&p)?.toolsmith,
                None => Default::default(),
            };
            let rule = toolsmith.gap_rule()?;
            let store = state.open()?;
            let gaps: Vec<_> = store
                .gaps(warden_store::now_ms(), &rule)?
                .into_iter()
                .filter(|g| g.recurring || !recurring)
                .collect();
            out!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "window-secs": toolsmith.gap_window_secs,
                    "threshold": toolsmith.gap_threshold,
                    "min-sessions": toolsmith.gap_min_sessions,
                    "gaps": gaps,
                }))?
            );
            Ok(Outcome::Ok)
        }
    }
}
