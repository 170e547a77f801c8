//! `warden approvals list|approve|deny`: answers asks waiting in a running
//! `warden serve`, through its admin socket (same state directory) or its
//! HTTP admin API (`--url` with an admin token).

use crate::out::out;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use warden_mcp::{AdminClient, AnswerBody};

use super::guardrail::GuardrailArgs;
use super::setup;
use crate::Outcome;

#[derive(Debug, Args)]
pub struct Target {
    /// The running server's state directory (its admin socket is there).
    #[arg(
        long,
        value_name = "DIR",
        env = "WARDEN_STATE_DIR",
        default_value = ".warden"
    )]
    pub state_dir: PathBuf,
    /// Talk to a server's HTTP admin API instead, e.g. http://127.0.0.1:7878
    #[arg(long, value_name = "URL", requires = "token")]
    pub url: Option<String>,
    /// An admin token for --url.
    #[arg(long, env = "WARDEN_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Pending approvals, oldest first (JSON).
    List {
        #[command(flatten)]
        target: Target,
    },
    /// Allow the call once, or always with --always RULE (added to the
    /// agent's allow rules). A rule broader than the asked call (anything
    /// but its suggested rule) needs --actor, --confirm and --reason.
    Approve {
        id: String,
        /// Also add this allow rule, e.g. the suggested rule or a broader one.
        #[arg(long, value_name = "RULE")]
        always: Option<String>,
        #[command(flatten)]
        guardrail: GuardrailArgs,
        #[command(flatten)]
        target: Target,
    },
    /// Deny the call.
    Deny {
        id: String,
        /// Why (shown to the agent).
        #[arg(long)]
        reason: Option<String>,
        /// Who denies (audited). Default: $WARDEN_ACTOR, else the login name.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
        #[command(flatten)]
        target: Target,
    },
}

fn client(target: &Target) -> AdminClient {
    match (&target.url, &target.token) {
        (Some(url), Some(token)) => AdminClient::Http {
            base: url.trim_end_matches('/').to_owned(),
            token: token.clone(),
        },
        _ => AdminClient::Socket(target.state_dir.join("admin.sock")),
    }
}

pub fn run(command: ApprovalsCommand) -> anyhow::Result<Outcome> {
    let rt = setup::tokio()?;
    let value = match &command {
        ApprovalsCommand::List { target } => rt.block_on(client(target).pending())?,
        ApprovalsCommand::Approve {
            id,
            always,
            guardrail,
            target,
        } => {
            if let Some(rule) = always {
                warden_policy::RuleSet::parse(std::slice::from_ref(rule), &[], &[])
                    .map_err(|e| anyhow::anyhow!("--always `{rule}`: {e}"))?;
            }
            let body = AnswerBody {
                decision: "approve".into(),
                always: always.clone(),
                reason: guardrail.reason.clone(),
                actor: guardrail.actor(),
                confirm: guardrail.confirm,
            };
            rt.block_on(client(target).answer(id, &body))?
        }
        ApprovalsCommand::Deny {
            id,
            reason,
            actor,
            target,
        } => {
            let who = GuardrailArgs {
                actor: actor.clone(),
                confirm: false,
                reason: None,
            };
            let body = AnswerBody {
                decision: "deny".into(),
                always: None,
                reason: reason.clone(),
                actor: who.actor(),
                confirm: false,
            };
            rt.block_on(client(target).answer(id, &body))?
        }
    };
    out!("{}", serde_json::to_string_pretty(&value)?);
    Ok(Outcome::Ok)
}
