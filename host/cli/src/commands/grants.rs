//! `warden grants list|issue|revoke`: the time-boxed capability grants in
//! a state directory. A running server sees changes on its next decision.

use crate::out::out;
use clap::Subcommand;
use warden_policy::{Boundary, Capability, CapabilityGrant};
use warden_store::now_ms;

use super::audit::StateDir;
use super::guardrail::GuardrailArgs;
use crate::Outcome;

#[derive(Debug, Subcommand)]
pub enum GrantsCommand {
    /// Grants in force (JSON); with --all, expired and revoked ones too.
    List {
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        state: StateDir,
    },
    /// Issue a grant as the operator (needs --actor, --confirm, --reason).
    Issue {
        #[arg(long)]
        agent: String,
        /// Only this MCP session.
        #[arg(long)]
        session: Option<String>,
        /// `tool:NAME`, `category:NAME` or `action:CATEGORY:ACTION`.
        #[arg(long)]
        capability: String,
        /// The goal the grant serves.
        #[arg(long)]
        goal: String,
        /// Seconds from now until it expires.
        #[arg(long, value_name = "SECS")]
        ttl: u64,
        /// Boundary: paths (file tools).
        #[arg(long = "path")]
        paths: Vec<String>,
        /// Boundary: hosts (network tools).
        #[arg(long = "host")]
        hosts: Vec<String>,
        /// Boundary: branches (git tools).
        #[arg(long = "branch")]
        branches: Vec<String>,
        #[command(flatten)]
        guardrail: GuardrailArgs,
        #[command(flatten)]
        state: StateDir,
    },
    /// Revoke a grant now (needs --actor, --confirm, --reason).
    Revoke {
        id: String,
        #[command(flatten)]
        guardrail: GuardrailArgs,
        #[command(flatten)]
        state: StateDir,
    },
}

pub fn run(command: GrantsCommand) -> anyhow::Result<Outcome> {
    let value = match command {
        GrantsCommand::List { all, state } => {
            let store = state.open()?;
            let now = now_ms();
            let list: Vec<serde_json::Value> = store
                .all_grants()?
                .into_iter()
                .filter(|(g, revoked)| all || (revoked.is_none() && now < g.valid_to_ms))
                .map(|(g, revoked)| {
                    let status = match revoked {
                        Some(_) => "revoked",
                        None if g.active_at(now) => "active",
                        None if now < g.valid_from_ms => "not-yet-valid",
                        None => "expired",
                    };
                    let mut v = serde_json::to_value(&g).unwrap_or_default();
                    if let Some(map) = v.as_object_mut() {
                        map.insert("status".into(), status.into());
                    }
                    v
                })
                .collect();
            serde_json::Value::Array(list)
        }
        GrantsCommand::Issue {
            agent,
            session,
            capability,
            goal,
            ttl,
            paths,
            hosts,
            branches,
            guardrail,
            state,
        } => {
            let capability: Capability = capability.parse()?;
            if let Capability::Level(level) = &capability {
                anyhow::bail!(
                    "--capability level:{level}: a grant cannot change an agent's level; \
                     levels change in the config or through progressive trust (`warden trust approve`)"
                );
            }
            let by = guardrail.check(&format!("issuing a grant of `{capability}` to `{agent}`"))?;
            let store = state.open()?;
            let now = now_ms();
            let grant = store.issue_grant(
                CapabilityGrant {
                    id: String::new(),
                    agent,
                    session,
                    capability,
                    boundary: Boundary {
                        paths,
                        hosts,
                        branches,
                    },
                    goal,
                    issuer: by.actor.clone(),
                    valid_from_ms: now,
                    valid_to_ms: now.saturating_add(ttl.saturating_mul(1000)),
                },
                Some(&by),
            )?;
            serde_json::to_value(grant)?
        }
        GrantsCommand::Revoke {
            id,
            guardrail,
            state,
        } => {
            let by = guardrail.check(&format!("revoking grant {id}"))?;
            let store = state.open()?;
            serde_json::to_value(store.revoke_grant(&id, &by)?)?
        }
    };
    out!("{}", serde_json::to_string_pretty(&value)?);
    Ok(Outcome::Ok)
}
