//! Modes: how the engine treats side effects no rule decided.

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Ask for every side effect an allow rule does not cover.
    #[default]
    Default,
    /// Read only: every side effect is denied.
    Plan,
    /// Edits to files inside the workspace are allowed; deletes, renames,
    /// moves (`code:delete`, `code:refactor`, or a tool named for one) and
    /// shell commands still ask.
    AcceptEdits,
    /// Allow everything except explicit ask and deny rules, and circuit
    /// breakers, which always ask.
    Autonomous,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Plan => "plan",
            Mode::AcceptEdits => "accept-edits",
            Mode::Autonomous => "autonomous",
        }
    }
}
