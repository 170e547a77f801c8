//! Access levels and the categories each one grants.
//!
//! Every level's categories are written out in one table, category by
//! category: a category added to the contract later is granted to no level
//! until someone adds its row here, and the integration tests fail while
//! any category of `warden-api` has no row.

use serde::{Deserialize, Serialize};

use crate::constraints::{
    CodeExecution, FileScope, GitAccess, NetworkMode, SubConstraints, TerminalAccess,
    default_restricted_commands,
};

/// The built-in levels, least to most trusted, plus named custom levels
/// defined in configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    Sandboxed,
    Restricted,
    Standard,
    Elevated,
    /// A level defined under `[levels.NAME]` in the configuration.
    Custom(String),
}

impl Level {
    pub fn name(&self) -> &str {
        match self {
            Level::Sandboxed => "sandboxed",
            Level::Restricted => "restricted",
            Level::Standard => "standard",
            Level::Elevated => "elevated",
            Level::Custom(name) => name,
        }
    }

    /// Parses a level name; anything that is not built in names a custom level.
    pub fn parse(name: &str) -> Level {
        match name {
            "sandboxed" => Level::Sandboxed,
            "restricted" => Level::Restricted,
            "standard" => Level::Standard,
            "elevated" => Level::Elevated,
            other => Level::Custom(other.to_owned()),
        }
    }

    fn column(&self) -> Option<usize> {
        match self {
            Level::Sandboxed => Some(0),
            Level::Restricted => Some(1),
            Level::Standard => Some(2),
            Level::Elevated => Some(3),
            Level::Custom(_) => None,
        }
    }

    /// Whether a built-in level grants a category. Custom levels grant
    /// what their definition lists (see [`crate::Policy`]).
    pub fn grants_category(&self, category: &str) -> bool {
        let Some(col) = self.column() else {
            return false;
        };
        LEVEL_CATEGORIES
            .iter()
            .find(|(c, _)| *c == category)
            .is_some_and(|(_, row)| row.get(col).copied().unwrap_or(false))
    }

    /// The sub-constraints a built-in level carries (reference 000, "Tool
    /// Access Levels"). Custom levels carry their definition's.
    pub fn default_constraints(&self) -> SubConstraints {
        let approvals = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        match self {
            Level::Sandboxed => SubConstraints {
                file_scope: FileScope::WorkspaceOnly,
                network: NetworkMode::None,
                terminal: TerminalAccess::None,
                git: GitAccess::LocalOnly,
                code_execution: CodeExecution::Sandboxed,
                requires_approval: approvals(&[]),
                restricted_commands: default_restricted_commands(),
            },
            Level::Restricted => SubConstraints {
                file_scope: FileScope::ProjectDirectory,
                network: NetworkMode::AllowlistOnly,
                terminal: TerminalAccess::None,
                git: GitAccess::ReadAndBranch,
                code_execution: CodeExecution::Sandboxed,
                requires_approval: approvals(&["deploy", "db:mutate", "db:admin"]),
                restricted_commands: default_restricted_commands(),
            },
            Level::Standard => SubConstraints {
                file_scope: FileScope::ProjectDirectory,
                network: NetworkMode::Open,
                terminal: TerminalAccess::RestrictedCommands,
                git: GitAccess::Full,
                code_execution: CodeExecution::Sandboxed,
                requires_approval: approvals(&[]),
                restricted_commands: default_restricted_commands(),
            },
            Level::Elevated | Level::Custom(_) => SubConstraints {
                file_scope: FileScope::Full,
                network: NetworkMode::Open,
                terminal: TerminalAccess::Full,
                git: GitAccess::Full,
                code_execution: CodeExecution::Sandboxed,
                requires_approval: approvals(&[]),
                restricted_commands: default_restricted_commands(),
            },
        }
    }
}

/// Category -> granted at [sandboxed, restricted, standard, elevated].
pub const LEVEL_CATEGORIES: [(&str, [bool; 4]); 15] = [
    ("file-system", [true, true, true, true]),
    ("code-execution", [true, true, true, true]),
    ("version-control", [true, true, true, true]),
    ("memory", [true, true, true, true]),
    ("web", [false, true, true, true]),
    ("external-data", [false, true, true, true]),
    ("browser", [false, true, true, true]),
    ("terminal", [false, false, true, true]),
    ("analytics", [false, false, true, true]),
    ("design", [false, false, true, true]),
    ("desktop", [false, false, true, true]),
    ("communication", [false, false, false, true]),
    ("database", [false, false, false, true]),
    ("deployment", [false, false, false, true]),
    ("mcp", [false, false, false, true]),
];

/// Every category the engine knows, in table order.
pub fn known_categories() -> impl Iterator<Item = &'static str> {
    LEVEL_CATEGORIES.iter().map(|(c, _)| *c)
}
