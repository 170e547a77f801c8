//! The toolsmith's gap log behind the gate: an unfulfilled request is
//! filed under the capability signature the host derives from the name
//! asked for (`warden_toolsmith::CapabilitySig`) and recorded in the
//! store's ring, which tallies recurrence by `[toolsmith]`'s rule. A name
//! that gives no signature is no gap (it is logged, not recorded).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use warden_api::{Clock, GapLog, JournalError, Unfulfilled};
use warden_store::{GapRule, NewGap, Store};
use warden_toolsmith::CapabilitySig;

use crate::ServerError;

/// `[toolsmith]`: generated tools (not built yet) and the gap log, which
/// records either way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ToolsmithConfig {
    /// Authoring and building generated tools. Default false (and nothing
    /// of it is built yet); gaps are recorded either way.
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
}

impl Default for ToolsmithConfig {
    fn default() -> ToolsmithConfig {
        ToolsmithConfig {
            enabled: false,
            gap_capacity: 4096,
            gap_threshold: 3,
            gap_window_secs: 24 * 60 * 60,
            gap_min_sessions: 2,
        }
    }
}

impl ToolsmithConfig {
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
                occurrences = tally.occurrences,
                sessions = tally.sessions,
                "a capability gap is recurring"
            );
        }
        Ok(())
    }
}
