//! `[progressive-trust]` in `warden.toml`: which strategy, and its thresholds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The built-in ladder trust moves agents along.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum TrustLevel {
    Sandboxed,
    Restricted,
    Standard,
    Elevated,
}

impl TrustLevel {
    pub fn name(self) -> &'static str {
        match self {
            TrustLevel::Sandboxed => "sandboxed",
            TrustLevel::Restricted => "restricted",
            TrustLevel::Standard => "standard",
            TrustLevel::Elevated => "elevated",
        }
    }

    /// The access level of the same name.
    pub fn level(self) -> crate::Level {
        crate::Level::parse(self.name())
    }

    pub(crate) fn up(self) -> TrustLevel {
        match self {
            TrustLevel::Sandboxed => TrustLevel::Restricted,
            TrustLevel::Restricted => TrustLevel::Standard,
            TrustLevel::Standard | TrustLevel::Elevated => TrustLevel::Elevated,
        }
    }

    pub(crate) fn down(self) -> TrustLevel {
        match self {
            TrustLevel::Elevated => TrustLevel::Standard,
            TrustLevel::Standard => TrustLevel::Restricted,
            TrustLevel::Restricted | TrustLevel::Sandboxed => TrustLevel::Sandboxed,
        }
    }
}

/// The strategy and its settings. Default: disabled at level standard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub enum TrustConfig {
    /// Agents keep their configured level.
    #[default]
    Disabled,
    /// One score from weighted factors, one level per agent.
    Weighted(WeightedConfig),
    /// A level per tool category, each promoted on its own criteria.
    PerCategory(PerCategoryConfig),
    /// Milestones with re-verification and decay.
    Milestone(MilestoneConfig),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WeightedConfig {
    pub initial_level: TrustLevel,
    #[serde(default)]
    pub weights: Weights,
    pub sandboxed_to_restricted: f64,
    pub restricted_to_standard: f64,
    /// Reaching it asks a person; it never promotes by itself.
    pub standard_to_elevated: f64,
}

/// Factors of the weighted score, each in 0..=1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Weights {
    pub task_difficulty: f64,
    pub completion_rate: f64,
    /// Counted inverted: fewer errors, more trust.
    pub error_rate: f64,
    pub human_feedback: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            task_difficulty: 0.3,
            completion_rate: 0.25,
            error_rate: 0.25,
            human_feedback: 0.2,
        }
    }
}

/// What a promotion needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Criteria {
    pub tasks_completed: u64,
    /// The lowest acceptable quality (mean human feedback, 0..=1).
    pub quality_min: f64,
    pub time_active_days: u64,
    /// No failed call in this many days.
    pub clean_history_days: u64,
    /// Ask a person even below elevated.
    pub requires_human_approval: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PerCategoryConfig {
    /// The level each category starts at; categories not listed start at
    /// `default-level`.
    #[serde(default)]
    pub initial_levels: BTreeMap<String, TrustLevel>,
    pub default_level: TrustLevel,
    /// Per category: criteria for the next step up from any level.
    #[serde(default)]
    pub promotion: BTreeMap<String, Criteria>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MilestoneConfig {
    pub initial_level: TrustLevel,
    pub sandboxed_to_restricted: Criteria,
    pub restricted_to_standard: Criteria,
    /// Meeting it asks a person; it never promotes by itself.
    pub standard_to_elevated: Criteria,
    #[serde(default)]
    pub re_verification: ReVerification,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ReVerification {
    pub enabled: bool,
    /// Re-check the criteria of the current level this often.
    pub interval_days: u64,
    /// Demote one level after this long without a call.
    pub decay_on_idle_days: u64,
    /// Demote one level when the error rate of the calls since the
    /// level last changed (ten at least) exceeds this; no promotion while
    /// the agent's whole record does.
    pub decay_on_error_rate: f64,
}

impl Default for ReVerification {
    fn default() -> Self {
        ReVerification {
            enabled: true,
            interval_days: 90,
            decay_on_idle_days: 30,
            decay_on_error_rate: 0.15,
        }
    }
}
