use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The built-in `category:action` taxonomy. Autonomy presets, approvals and
/// trust are keyed by these; a typo must be an error, never "no rule".
pub const BUILTIN_ACTION_TYPES: [&str; 41] = [
    "code:read",
    "code:write",
    "code:create",
    "code:delete",
    "code:refactor",
    "test:write",
    "test:run",
    "docs:write",
    "vcs:read",
    "vcs:commit",
    "vcs:push",
    "vcs:branch",
    "deploy:staging",
    "deploy:production",
    "comms:internal",
    "comms:external",
    "budget:spend",
    "budget:exceed",
    "org:hire",
    "org:fire",
    "org:promote",
    "db:query",
    "db:mutate",
    "db:admin",
    "arch:decide",
    "tool:create",
    "memory:read",
    "knowledge:ingest",
    "knowledge:reindex",
    "browser:navigate",
    "browser:screenshot",
    "browser:diff",
    "browser:accessibility_scan",
    "browser:spec",
    "external_data:request",
    "desktop:launch",
    "desktop:click",
    "desktop:type",
    "desktop:key",
    "desktop:screenshot",
    "desktop:scroll",
];

/// A `category:action` action type from the built-in taxonomy.
///
/// Custom action types exist only through explicit registration in the
/// policy configuration; a tool spec may name only built-in ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ActionType(String);

impl ActionType {
    /// The action type as written, e.g. `code:read`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before the colon, e.g. `code`.
    pub fn category(&self) -> &str {
        self.0.split_once(':').map_or(self.0.as_str(), |(c, _)| c)
    }
}

impl FromStr for ActionType {
    type Err = crate::SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if BUILTIN_ACTION_TYPES.contains(&s) {
            Ok(ActionType(s.to_owned()))
        } else {
            Err(crate::SpecError::UnknownActionType(s.to_owned()))
        }
    }
}

impl TryFrom<String> for ActionType {
    type Error = crate::SpecError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ActionType> for String {
    fn from(a: ActionType) -> String {
        a.0
    }
}

impl fmt::Display for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
