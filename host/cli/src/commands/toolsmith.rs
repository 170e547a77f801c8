//! `warden toolsmith gaps`: the capability gaps of a state directory (or
//! its PostgreSQL database): every `domain:action` asked for within the
//! configured window that no tool serves, with how often, from how many
//! sessions and agents, and whether it is recurring.
//!
//! `warden toolsmith propose | author | blueprints | show | approve |
//! reject`: the blueprints and the `tool:create` approval (an operator channel: the
//! agents' MCP connection never reaches these).
//!
//! `warden toolsmith retire [--rollback] | verify`: taking a generated
//! tool out of service (a running host follows within seconds), and
//! checking every built tool's signed statement.

use crate::out::out;
use std::path::PathBuf;

use clap::Subcommand;
use warden_server::Config;
use warden_server::toolsmith::Toolsmith;

use super::audit::StateDir;
use super::guardrail::GuardrailArgs;
use crate::Outcome;

/// Where the configuration and the state are.
#[derive(Debug, clap::Args)]
pub struct Place {
    /// The configuration with `[toolsmith]` (default: ./warden.toml when
    /// present, else the defaults).
    #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    state: StateDir,
}

impl Place {
    fn config(&self) -> anyhow::Result<Config> {
        let path = self
            .config
            .clone()
            .or_else(|| Some(PathBuf::from("warden.toml")).filter(|p| p.is_file()));
        Ok(match path {
            Some(p) => Config::load(&p)?,
            None => Config::default(),
        })
    }

    fn key(&self) -> anyhow::Result<warden_signing::SecretKey> {
        Ok(warden_server::toolsmith::toolsmith_key(
            &self.state.state_dir,
            &self.config()?,
        )?)
    }

    fn toolsmith(&self) -> anyhow::Result<Toolsmith> {
        let config = self.config()?;
        config.toolsmith.check()?;
        Ok(Toolsmith::new(
            self.state.open()?,
            &config,
            std::sync::Arc::new(warden_api::SystemClock),
        ))
    }
}

fn print(value: &impl serde::Serialize) -> anyhow::Result<Outcome> {
    out!("{}", serde_json::to_string_pretty(value)?);
    Ok(Outcome::Ok)
}

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
    /// Proposes a blueprint (JSON) as an operator; it waits for approval.
    Propose {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Who proposes it (default: $WARDEN_ACTOR, else the login name).
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
        #[command(flatten)]
        place: Place,
    },
    /// Runs `[toolsmith] author-command` for a gap in the log (a running
    /// host does so by itself when a gap becomes recurring) and keeps the
    /// blueprint it writes as pending.
    Author {
        /// The gap's `domain:action` (`warden toolsmith gaps`).
        signature: String,
        #[command(flatten)]
        place: Place,
    },
    /// The blueprints and where each stands (JSON).
    Blueprints {
        #[command(flatten)]
        place: Place,
    },
    /// What approving a blueprint means: the derived name, category,
    /// action type, the grants in words, the source, the cases, and the
    /// digests an approval binds (JSON).
    Show {
        id: u64,
        #[command(flatten)]
        place: Place,
    },
    /// Approves creating the tool (`tool:create`), bound to the
    /// blueprint, builder and grants digests as they are now.
    Approve {
        id: u64,
        /// The blueprint digest you looked at (`show`'s binding.blueprint):
        /// the approval is refused if the blueprint is another.
        #[arg(long, value_name = "SHA256")]
        digest: Option<String>,
        #[command(flatten)]
        guard: GuardrailArgs,
        #[command(flatten)]
        place: Place,
    },
    /// Rejects a blueprint.
    Reject {
        id: u64,
        #[command(flatten)]
        guard: GuardrailArgs,
        #[command(flatten)]
        place: Place,
    },
    /// Retires the active version of a generated tool: it is no longer
    /// listed or callable (calls in flight finish).
    Retire {
        /// The tool's name (`gen_{domain}_{action}`).
        name: String,
        /// Make the version it superseded active again (after checking
        /// its signed statement).
        #[arg(long)]
        rollback: bool,
        #[command(flatten)]
        guard: GuardrailArgs,
        #[command(flatten)]
        place: Place,
    },
    /// Checks every built tool's signed statement against its stored
    /// component, with the toolsmith key (JSON; fails if any does not).
    Verify {
        #[command(flatten)]
        place: Place,
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
        ToolsmithCommand::Propose { file, actor, place } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
            let actor = GuardrailArgs {
                actor,
                confirm: false,
                reason: None,
            }
            .actor()
            .unwrap_or_else(|| "operator".into());
            let stored = place
                .toolsmith()?
                .propose(&text, &format!("operator:{actor}"))?;
            print(&serde_json::json!({
                "id": stored.id, "name": stored.name, "state": stored.state,
                "blueprint_sha256": stored.blueprint_sha256,
            }))
        }
        ToolsmithCommand::Author { signature, place } => {
            let config = place.config()?;
            let command = warden_server::toolsmith::AuthorCommand::configured(&config.toolsmith)
                .ok_or_else(|| {
                    anyhow::anyhow!("no author command: set `[toolsmith] author-command`")
                })?;
            let smith = place.toolsmith()?;
            let stored =
                super::setup::tokio()?.block_on(smith.author_with(&command, &signature))?;
            print(&serde_json::json!({
                "id": stored.id, "name": stored.name, "state": stored.state,
                "author": stored.author, "blueprint_sha256": stored.blueprint_sha256,
            }))
        }
        ToolsmithCommand::Blueprints { place } => {
            let listed: Vec<_> = place
                .toolsmith()?
                .list()?
                .iter()
                .map(warden_server::toolsmith::summary)
                .collect();
            print(&serde_json::json!({ "blueprints": listed }))
        }
        ToolsmithCommand::Show { id, place } => print(&place.toolsmith()?.show(id)?),
        ToolsmithCommand::Approve {
            id,
            digest,
            guard,
            place,
        } => {
            let by = guard.check("approving a tool's creation (tool:create)")?;
            let stored = place.toolsmith()?.approve(id, &by, digest.as_deref())?;
            print(&serde_json::json!({
                "id": stored.id, "name": stored.name, "state": stored.state,
                "approval": stored.approval.as_deref().map(serde_json::from_str::<serde_json::Value>).transpose()?,
            }))
        }
        ToolsmithCommand::Retire {
            name,
            rollback,
            guard,
            place,
        } => {
            let by = guard.check(if rollback {
                "rolling a generated tool back"
            } else {
                "retiring a generated tool"
            })?;
            let toolsmith = place.toolsmith()?;
            let key = place.key()?;
            let verify = |b: &warden_store::StoredBlueprint| {
                warden_server::toolsmith::verify_one(&toolsmith, b, &key)
            };
            let moved = toolsmith.retire(&name, &by, rollback, &verify)?;
            let moved: Vec<_> = moved
                .iter()
                .map(|b| serde_json::json!({"id": b.id, "name": b.name, "state": b.state}))
                .collect();
            print(&serde_json::json!({ "moved": moved }))
        }
        ToolsmithCommand::Verify { place } => {
            let checked = warden_server::toolsmith::verify_all(&place.toolsmith()?, &place.key()?)?;
            let all = checked.iter().all(|c| c["verified"] == true);
            print(&serde_json::json!({ "verified": all, "blueprints": checked }))?;
            Ok(if all {
                Outcome::Ok
            } else {
                Outcome::CallFailed
            })
        }
        ToolsmithCommand::Reject { id, guard, place } => {
            let by = guard.check("rejecting a blueprint")?;
            let stored = place.toolsmith()?.reject(id, &by)?;
            print(&serde_json::json!({
                "id": stored.id, "name": stored.name, "state": stored.state,
                "reason": stored.reason,
            }))
        }
    }
}
