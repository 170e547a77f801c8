//! `warden trust show|feedback|approve`: an agent's progressive trust in
//! a state directory. `approve` is the only way an agent reaches
//! elevated through trust: a person runs it. A running server applies the
//! new levels at the agent's next call outcome.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use warden_policy::trust::{TrustConfig, TrustEvent, approve_promotion};
use warden_store::now_ms;

use super::audit::StateDir;
use super::guardrail::GuardrailArgs;
use crate::Outcome;
use crate::config::Config;

#[derive(Debug, Args)]
pub struct Target {
    /// The agent.
    agent: String,
    /// The configuration naming the trust strategy (default: ./warden.toml
    /// when present, else trust disabled).
    #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    state: StateDir,
}

#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// The agent's trust state (JSON).
    Show(Target),
    /// Rate the agent's work, 0..=1 (feeds the strategy).
    Feedback {
        #[command(flatten)]
        target: Target,
        /// The score, from 0 (bad) to 1 (excellent).
        #[arg(long)]
        score: f64,
        /// The tool category the feedback is about (per-category trust).
        #[arg(long)]
        category: Option<String>,
    },
    /// Approve the promotion waiting for a person (e.g. to elevated);
    /// needs --actor, --confirm and --reason.
    Approve {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        guardrail: GuardrailArgs,
    },
}

fn strategy(target: &Target) -> anyhow::Result<TrustConfig> {
    let path = match &target.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("warden.toml")).filter(|p| p.is_file()),
    };
    let trust = match path {
        Some(p) => Config::load(&p)?.progressive_trust,
        None => TrustConfig::Disabled,
    };
    trust.validate().map_err(anyhow::Error::msg)?;
    Ok(trust)
}

#[expect(clippy::print_stdout, reason = "the command's output")]
pub fn run(command: TrustCommand) -> anyhow::Result<Outcome> {
    let value = match command {
        TrustCommand::Show(target) => {
            let config = strategy(&target)?;
            let store = crate::state::open(&target.state.state_dir, false)?;
            serde_json::to_value(crate::progressive::load(&store, &config, &target.agent)?)?
        }
        TrustCommand::Feedback {
            target,
            score,
            category,
        } => {
            if !(0.0..=1.0).contains(&score) {
                anyhow::bail!("--score must be between 0 and 1");
            }
            let config = strategy(&target)?;
            let store = crate::state::open(&target.state.state_dir, false)?;
            let mut state = crate::progressive::load(&store, &config, &target.agent)?;
            let event = TrustEvent::Feedback {
                category: category.as_deref(),
                score,
            };
            let step = config.apply(&mut state, event, now_ms());
            crate::progressive::save(&store, &target.agent, &state, &step)?;
            serde_json::to_value(&state)?
        }
        TrustCommand::Approve { target, guardrail } => {
            let by = guardrail.check(&format!("approving the promotion of `{}`", target.agent))?;
            let config = strategy(&target)?;
            let store = crate::state::open(&target.state.state_dir, false)?;
            let mut state = crate::progressive::load(&store, &config, &target.agent)?;
            let Some(promotion) = approve_promotion(&mut state) else {
                anyhow::bail!(
                    "agent `{}` has no promotion waiting for a person",
                    target.agent
                );
            };
            crate::progressive::approved(&store, &target.agent, &state, &promotion, by)?;
            serde_json::to_value(&state)?
        }
    };
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(Outcome::Ok)
}
