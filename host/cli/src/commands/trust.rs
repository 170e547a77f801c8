//! `warden trust show|feedback|approve`: an agent's progressive trust.
//! Through the admin socket when a server runs with this state directory
//! (the server keeps trust in memory: it applies at once), else on the
//! state database directly. `approve` is the only way an agent reaches
//! elevated through trust: a person runs it.

use crate::out::out;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::Value;
use warden_api::TrustAdmin;
use warden_gate::{SystemClock, TrustKeeper};
use warden_mcp::AdminClient;
use warden_policy::trust::TrustConfig;
use warden_server::{Config, StoreTrust};

use super::audit::StateDir;
use super::guardrail::GuardrailArgs;
use super::setup;
use crate::Outcome;

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

/// The trust of the state directory's agents, without a running server.
fn offline(target: &Target) -> anyhow::Result<TrustKeeper> {
    let store = target.state.open()?;
    Ok(TrustKeeper::load(
        strategy(target)?,
        Arc::new(StoreTrust(store)),
        Arc::new(SystemClock),
        &[],
    )?)
}

/// The running server of the target's state directory, if one answers.
async fn running(target: &Target) -> Option<AdminClient> {
    let socket = target.state.state_dir.join("admin.sock");
    let answers = tokio::net::UnixStream::connect(&socket).await.is_ok();
    answers.then_some(AdminClient::Socket(socket))
}

pub fn run(command: TrustCommand) -> anyhow::Result<Outcome> {
    let rt = setup::tokio()?;
    let value: Value = rt.block_on(async {
        anyhow::Ok(match &command {
            TrustCommand::Show(target) => match running(target).await {
                Some(client) => client.trust(&target.agent).await?,
                None => offline(target)?.show(&target.agent)?,
            },
            TrustCommand::Feedback {
                target,
                score,
                category,
            } => {
                if !(0.0..=1.0).contains(score) {
                    anyhow::bail!("--score must be between 0 and 1");
                }
                match running(target).await {
                    Some(client) => {
                        client
                            .trust_feedback(&target.agent, *score, category.as_deref())
                            .await?
                    }
                    None => {
                        offline(target)?.feedback(&target.agent, category.as_deref(), *score)?
                    }
                }
            }
            TrustCommand::Approve { target, guardrail } => {
                let by =
                    guardrail.check(&format!("approving the promotion of `{}`", target.agent))?;
                match running(target).await {
                    Some(client) => {
                        client
                            .trust_approve(&target.agent, &guardrail.guardrail())
                            .await?
                    }
                    None => offline(target)?.approve(&target.agent, by)?,
                }
            }
        })
    })?;
    out!("{}", serde_json::to_string_pretty(&value)?);
    Ok(Outcome::Ok)
}
