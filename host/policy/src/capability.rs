//! Time-boxed capability grants: a temporary right for one agent (and
//! optionally one session) to use a tool, a category or an action type,
//! within boundary parameters, for a goal, until an expiry. The engine
//! decides with them ([`crate::GrantSet`]); the store keeps them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// One tool, or a glob over tool names (`fs_*`).
    Tool(String),
    /// Every tool of a category (`network`).
    Category(String),
    /// An action type (`code:write`) or a whole action category (`code:*`).
    Action(String),
    /// An access level (`level:elevated`): never covers a call by itself;
    /// granting it is a trust promotion, which always needs a person.
    Level(String),
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Tool(t) => write!(f, "tool:{t}"),
            Capability::Category(c) => write!(f, "category:{c}"),
            Capability::Action(a) => write!(f, "action:{a}"),
            Capability::Level(l) => write!(f, "level:{l}"),
        }
    }
}

/// Why a capability string is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a capability: write `tool:NAME`, `category:NAME`, `action:CATEGORY:ACTION` or `level:NAME`"
)]
pub struct CapabilityError(pub String);

impl FromStr for Capability {
    type Err = CapabilityError;

    fn from_str(s: &str) -> Result<Capability, CapabilityError> {
        let bad = || CapabilityError(s.to_owned());
        let (kind, value) = s.trim().split_once(':').ok_or_else(bad)?;
        let value = value.trim().to_ascii_lowercase();
        if value.is_empty() {
            return Err(bad());
        }
        match kind {
            "tool" => Ok(Capability::Tool(
                crate::renamed_tool(&value).unwrap_or(value),
            )),
            "category" => Ok(Capability::Category(value)),
            "action" if value.contains(':') => Ok(Capability::Action(value)),
            "level" => Ok(Capability::Level(value)),
            _ => Err(bad()),
        }
    }
}

impl Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Capability, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a grant applies inside its capability. An empty list does not
/// narrow; a non-empty one must match the call's specifier (paths for
/// file tools, hosts for network tools, branches for git tools: the branch
/// after the specifier's last `:`, so `feat/*` covers `git_push(origin:feat/x)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Boundary {
    pub paths: Vec<String>,
    pub hosts: Vec<String>,
    pub branches: Vec<String>,
}

impl Boundary {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.hosts.is_empty() && self.branches.is_empty()
    }
}

/// One grant. Times are milliseconds since the Unix epoch; the grant
/// applies from `valid_from_ms` (inclusive) to `valid_to_ms` (exclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CapabilityGrant {
    pub id: String,
    pub agent: String,
    /// Only this session, when set.
    pub session: Option<String>,
    pub capability: Capability,
    #[serde(default)]
    pub boundary: Boundary,
    /// The goal the grant serves.
    pub goal: String,
    /// Who issued it: `auto` (within configured bounds), `operator`, or
    /// the approval id a person answered.
    pub issuer: String,
    pub valid_from_ms: u64,
    pub valid_to_ms: u64,
}

impl CapabilityGrant {
    /// Whether the grant is in force at `now_ms`.
    pub fn active_at(&self, now_ms: u64) -> bool {
        self.valid_from_ms <= now_ms && now_ms < self.valid_to_ms
    }
}
