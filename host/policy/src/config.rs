//! The policy part of `warden.toml`, as parsed. Unknown keys, modes, file
//! scopes and the like are rejected by serde; categories, action types,
//! levels and rules are checked when a [`crate::Policy`] is built from it,
//! with the key path of anything wrong.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Mode;
use crate::constraints::{
    CodeExecution, ConstraintOverrides, FileScope, GitAccess, NetworkMode, TerminalAccess,
};

/// Rule lists: `tool` or `tool(specifier)`, `*` globs allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RulesConfig {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// A custom access level: its categories and constraints, all explicit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LevelConfig {
    /// The categories this level grants (e.g. `file-system`).
    pub categories: Vec<String>,
    pub file_scope: FileScope,
    pub network: NetworkMode,
    pub terminal: TerminalAccess,
    pub git: GitAccess,
    pub code_execution: CodeExecution,
    #[serde(default)]
    pub requires_approval: Vec<String>,
    /// Programs denied under `terminal = "restricted-commands"`; default:
    /// sudo, su, doas, pkexec, mount, chroot, nsenter, shutdown, reboot and
    /// the like (see docs/configuration.md).
    #[serde(default)]
    pub restricted_commands: Option<Vec<String>>,
}

/// One agent: its level, mode, lists and overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AgentConfig {
    /// `sandboxed`, `restricted`, `standard`, `elevated`, or a custom level.
    pub level: String,
    #[serde(default)]
    pub mode: Mode,
    /// Tools (names or `*` globs) this agent may use whatever its level.
    #[serde(default)]
    pub allowed: Vec<String>,
    /// Tools this agent may never use; wins over everything.
    #[serde(default)]
    pub denied: Vec<String>,
    /// Hosts (`*` globs) web tools may reach when network is allowlist-only.
    #[serde(default)]
    pub network_allowlist: Vec<String>,
    /// Replaces individual sub-constraints of the level.
    #[serde(default)]
    pub constraints: ConstraintOverrides,
    /// Rules for this agent, checked after the global rules.
    #[serde(default)]
    pub rules: RulesConfig,
    /// Who answers this agent's asks: `client` (the person behind its MCP
    /// client, through elicitation) or `operator` (only `warden approvals`
    /// and the admin API). Default: `operator` for agents that connect
    /// with a bearer token, `client` otherwise (stdio, loopback without
    /// tokens).
    #[serde(default)]
    pub approvals: Option<Approvals>,
    /// Rules for calls by given signed-in principals (OAuth): each
    /// entry's `deny` and `ask` rules apply on top of this agent's.
    #[serde(default)]
    pub principals: Vec<crate::PrincipalRulesConfig>,
}

/// Who answers an agent's asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Approvals {
    /// The person behind the agent's MCP client, through elicitation
    /// (operators can answer too).
    Client,
    /// Only operators: answers on the agent's own connection are refused.
    Operator,
}

/// The policy sections of `warden.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PolicyConfig {
    /// Custom action types (`category:action`), registered explicitly.
    #[serde(default)]
    pub action_types: Vec<String>,
    /// Rules for every agent.
    #[serde(default)]
    pub rules: RulesConfig,
    /// Custom levels by name.
    #[serde(default)]
    pub levels: BTreeMap<String, LevelConfig>,
    /// Agents by id.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Denied and protected paths, for every tool.
    #[serde(default)]
    pub protect: ProtectConfig,
}

/// Paths every tool is kept from (`read`) or must ask before changing
/// (`write`), added to the built-in defaults (credentials; git hooks and
/// config, shell startup files, Warden's config and state, agents' rules
/// files). Patterns as in rules: `~/x`, `//abs`, `/workspace-relative`,
/// `name/` at any depth.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProtectConfig {
    /// Denied: no tool may read or change these.
    #[serde(default)]
    pub read: Vec<String>,
    /// Protected: readable, but every write, delete or rename asks a
    /// person, in every mode.
    #[serde(default)]
    pub write: Vec<String>,
}
