//! The toolsmith's gap log behind the gate: an unfulfilled request is
//! filed under the capability signature the host derives from the name
//! asked for (`warden_toolsmith::CapabilitySig`) and recorded in the
//! store's ring, which tallies recurrence by `[toolsmith]`'s rule. A name
//! that gives no signature is no gap (it is logged, not recorded).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use warden_api::{Clock, GapLog, JournalError, Unfulfilled};
use warden_store::{GapRule, NewGap, Store};
use warden_toolsmith::{CapabilityRule, CapabilitySig, Sandbox};

use crate::ServerError;

/// `[toolsmith]`: generated tools (blueprints and their approval; the
/// builder is not built yet) and the gap log, which records either way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ToolsmithConfig {
    /// Authoring generated tools (`toolsmith_propose` for agents).
    /// Default false; gaps are recorded either way, and operators may
    /// propose blueprints either way.
    pub enabled: bool,
    /// Rows the gap log keeps; the oldest go first. Default 4096.
    pub gap_capacity: u64,
    /// Requests for one capability within the window that make it a
    /// recurring gap. Default 3.
    pub gap_threshold: u64,
    /// The window, in seconds. Default 86400 (a day).
    pub gap_window_secs: u64,
    /// Distinct sessions those requests must come from (one session
    /// repeating itself counts once). Default 2.
    pub gap_min_sessions: u64,
    /// The category of generated tools when no `[toolsmith.capabilities]`
    /// entry sets one. Default none: a blueprint whose capability has no
    /// category is refused.
    pub category: Option<String>,
    /// Per-capability category and action type, keyed `domain:action` or
    /// `domain:*`.
    pub capabilities: BTreeMap<String, CapabilityRule>,
    /// The only source of a generated tool's grants and limits. Default:
    /// no files, no network, 5 s, 10^9 fuel, 64 MiB, 1 MiB of output.
    pub sandbox: Sandbox,
    /// The largest `lib.rs` a blueprint may carry. Default 262144.
    pub max_source_bytes: u64,
    /// The largest prebuilt component a blueprint may carry. Default
    /// 8388608.
    pub max_component_bytes: u64,
    /// How long a proposed blueprint waits for a person before it is
    /// rejected. Default 604800 (seven days).
    pub approval_ttl_secs: u64,
    /// Blueprints one author may propose within 24 hours. Default 5.
    pub max_blueprints_per_day: u64,
    /// The toolsmith key: signs every generated tool's statement, and is
    /// a trust root for generated tools only (created owner-only when
    /// missing). Default `toolsmith.key` in the state directory; replicas
    /// sharing a store need the same file.
    pub key: Option<std::path::PathBuf>,
    /// An operator's program that writes blueprints for recurring gaps:
    /// argv (never a shell string), run on the host when a gap becomes
    /// recurring, with the gap on its stdin and a blueprint expected on
    /// its stdout (docs/toolsmith.md). Default none.
    pub author_command: Vec<String>,
    /// How long the author command may run before its process group is
    /// killed, and how long the client's model has when sampling writes
    /// the blueprint. Default 120.
    pub author_deadline_secs: u64,
    /// Asks the model behind an MCP client for a blueprint (MCP
    /// sampling) when that client's call makes a gap recurring and the
    /// client declared sampling (docs/toolsmith.md). Default false; not
    /// with `author-command`.
    pub author_sampling: bool,
}

impl Default for ToolsmithConfig {
    fn default() -> ToolsmithConfig {
        ToolsmithConfig {
            enabled: false,
            gap_capacity: 4096,
            gap_threshold: 3,
            gap_window_secs: 24 * 60 * 60,
            gap_min_sessions: 2,
            category: None,
            capabilities: BTreeMap::new(),
            sandbox: Sandbox::default(),
            max_source_bytes: 256 * 1024,
            max_component_bytes: 8 * 1024 * 1024,
            approval_ttl_secs: 7 * 24 * 60 * 60,
            max_blueprints_per_day: 5,
            key: None,
            author_command: Vec::new(),
            author_deadline_secs: 120,
            author_sampling: false,
        }
    }
}

impl ToolsmithConfig {
    /// Every key that is not the gap rule's, checked.
    pub fn check(&self) -> Result<(), ServerError> {
        self.gap_rule()?;
        self.sandbox
            .check()
            .map_err(|(at, message)| ServerError::config(at, message))?;
        let category = |at: String, c: &str| {
            c.parse::<warden_api::Category>()
                .map(|_| ())
                .map_err(|_| ServerError::config(at, format!("`{c}` is not a category")))
        };
        if let Some(c) = &self.category {
            category("toolsmith.category".into(), c)?;
        }
        for (key, rule) in &self.capabilities {
            let at = format!("toolsmith.capabilities.\"{key}\"");
            let (domain, action) = key.split_once(':').unwrap_or((key, ""));
            let sig_ok = if action == "*" {
                CapabilitySig::new(domain, "x").is_ok()
            } else {
                CapabilitySig::new(domain, action).is_ok()
            };
            if !sig_ok {
                return Err(ServerError::config(
                    at,
                    "must be `domain:action` or `domain:*`",
                ));
            }
            if let Some(c) = &rule.category {
                category(format!("{at}.category"), c)?;
            }
            if rule.action_type.as_deref() == Some("tool:create") {
                return Err(ServerError::config(
                    format!("{at}.action-type"),
                    "a generated tool may not create tools",
                ));
            }
        }
        for (key, value) in [
            ("max-source-bytes", self.max_source_bytes),
            ("max-component-bytes", self.max_component_bytes),
            ("approval-ttl-secs", self.approval_ttl_secs),
            ("max-blueprints-per-day", self.max_blueprints_per_day),
            ("author-deadline-secs", self.author_deadline_secs),
        ] {
            if value == 0 {
                return Err(ServerError::config(
                    format!("toolsmith.{key}"),
                    "must be at least 1",
                ));
            }
        }
        if let Some(program) = self.author_command.first() {
            if program.trim().is_empty() {
                return Err(ServerError::config(
                    "toolsmith.author-command[0]",
                    "must name the program to run",
                ));
            }
            if !self.enabled {
                return Err(ServerError::config(
                    "toolsmith.author-command",
                    "authors blueprints only with `enabled = true`",
                ));
            }
            if self.author_sampling {
                return Err(ServerError::config(
                    "toolsmith.author-sampling",
                    "one author writes up recurring gaps: choose `author-command` or \
                     `author-sampling`, not both",
                ));
            }
        }
        if self.author_sampling && !self.enabled {
            return Err(ServerError::config(
                "toolsmith.author-sampling",
                "authors blueprints only with `enabled = true`",
            ));
        }
        Ok(())
    }

    /// The store's rule, every number checked.
    pub fn gap_rule(&self) -> Result<GapRule, ServerError> {
        let positive = |key: &str, value: u64| {
            if value == 0 {
                Err(ServerError::config(
                    format!("toolsmith.{key}"),
                    "must be at least 1",
                ))
            } else {
                Ok(value)
            }
        };
        let window = Duration::from_secs(positive("gap-window-secs", self.gap_window_secs)?);
        Ok(GapRule {
            capacity: positive("gap-capacity", self.gap_capacity)?,
            threshold: positive("gap-threshold", self.gap_threshold)?,
            window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
            min_sessions: positive("gap-min-sessions", self.gap_min_sessions)?,
        })
    }
}

/// The gap log in the store.
pub struct StoreGaps {
    pub store: Arc<dyn Store>,
    pub rule: GapRule,
    pub clock: Arc<dyn Clock>,
    /// Told of each gap this host saw become recurring, when an author
    /// writes them up.
    pub author: Option<RecurringAuthor>,
}

/// Who is told of a gap that became recurring.
#[derive(Debug, Clone)]
pub enum RecurringAuthor {
    /// The author command's queue: the signature.
    Command(tokio::sync::mpsc::Sender<String>),
    /// The model behind the MCP client whose call made it recurring.
    Sampling(Arc<crate::toolsmith::SamplingDesk>),
}

impl std::fmt::Debug for StoreGaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreGaps")
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

impl GapLog for StoreGaps {
    fn unfulfilled(
        &self,
        agent: &str,
        session: &str,
        what: &Unfulfilled,
    ) -> Result<(), JournalError> {
        let signature = match CapabilitySig::of_tool(what.name()) {
            Ok(signature) => signature,
            Err(e) => {
                tracing::debug!(asked = what.name(), error = %e, "no capability gap");
                return Ok(());
            }
        };
        let tally = self
            .store
            .record_gap(
                &NewGap {
                    signature: signature.to_string(),
                    agent: agent.to_owned(),
                    session: session.to_owned(),
                    asked: what.name().trim().to_owned(),
                    at_ms: self.clock.now_ms(),
                },
                &self.rule,
            )
            .map_err(|e| JournalError::with_source("recording a capability gap", e))?;
        if tally.became_recurring {
            tracing::info!(
                signature = %tally.signature,
                occurrences = tally.counts.map(|c| c.occurrences),
                sessions = tally.counts.map(|c| c.sessions),
                "a capability gap is recurring"
            );
            match &self.author {
                Some(RecurringAuthor::Command(queue))
                    if queue.try_send(tally.signature.clone()).is_err() =>
                {
                    tracing::warn!(
                        signature = %tally.signature,
                        "the author command is busy: no blueprint is asked for this gap \
                         (`warden toolsmith author` still asks for one)"
                    );
                }
                Some(RecurringAuthor::Sampling(desk)) => {
                    desk.recurred(agent, session, &tally.signature);
                }
                _ => {}
            }
        }
        Ok(())
    }
}
