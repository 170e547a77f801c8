//! The sub-constraints of an access level, applied to each call.

use serde::{Deserialize, Serialize};

/// Where file tools may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FileScope {
    /// Only inside the agent's workspace.
    WorkspaceOnly,
    /// Only inside the project directory (the workspace unless configured).
    ProjectDirectory,
    /// Anywhere the call's grants reach.
    Full,
}

/// Whether web and external-data tools may reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    None,
    /// Only hosts in the agent's `network-allowlist`.
    AllowlistOnly,
    Open,
}

/// What terminal tools may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TerminalAccess {
    None,
    /// Read-only commands and commands an allow rule names run; the
    /// level's restricted commands (`sudo`, `mount`, `chroot`, ...) are
    /// denied; everything else follows the mode.
    RestrictedCommands,
    Full,
}

/// What version-control tools may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GitAccess {
    /// Read, branch and commit locally; never clone, fetch or push, never
    /// restore or reset.
    LocalOnly,
    /// Read, branch, clone and fetch; never commit, restore, reset or push.
    ReadAndBranch,
    /// Every operation (a force push still asks: a circuit breaker).
    Full,
}

/// Where code-execution tools may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CodeExecution {
    /// In a sandbox: a WebAssembly instance or a container, never as a
    /// process of the host. The default of every built-in level
    /// (`containerized` is its older spelling).
    #[serde(alias = "containerized")]
    Sandboxed,
    /// Only in a container (the Docker sandbox), not in a WebAssembly
    /// instance either.
    Container,
}

/// The constraints applied to every call of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SubConstraints {
    pub file_scope: FileScope,
    pub network: NetworkMode,
    pub terminal: TerminalAccess,
    pub git: GitAccess,
    pub code_execution: CodeExecution,
    /// Action types (or category shortcuts such as `deploy`) that always
    /// need a person's approval.
    pub requires_approval: Vec<String>,
    /// Programs denied under `terminal = "restricted-commands"`, wherever
    /// they appear on a command line (behind wrappers, in `sh -c` and
    /// `eval` text, in `$(...)`).
    pub restricted_commands: Vec<String>,
}

/// The commands `restricted-commands` terminal access denies unless a
/// level or agent names its own list: privilege changes, mounts and
/// namespaces, kernel modules, and stopping the machine.
pub const DEFAULT_RESTRICTED_COMMANDS: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "setpriv",
    "capsh",
    "mount",
    "umount",
    "chroot",
    "pivot_root",
    "nsenter",
    "unshare",
    "shutdown",
    "reboot",
    "poweroff",
    "halt",
    "telinit",
    "insmod",
    "rmmod",
    "modprobe",
    "swapon",
    "swapoff",
];

/// [`DEFAULT_RESTRICTED_COMMANDS`], owned.
pub fn default_restricted_commands() -> Vec<String> {
    DEFAULT_RESTRICTED_COMMANDS
        .iter()
        .map(|c| (*c).to_owned())
        .collect()
}

/// Per-agent overrides: each field, when set, replaces the level's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConstraintOverrides {
    pub file_scope: Option<FileScope>,
    pub network: Option<NetworkMode>,
    pub terminal: Option<TerminalAccess>,
    pub git: Option<GitAccess>,
    pub code_execution: Option<CodeExecution>,
    pub requires_approval: Option<Vec<String>>,
    /// Replaces the level's restricted commands.
    pub restricted_commands: Option<Vec<String>>,
}

impl SubConstraints {
    pub fn apply(mut self, o: &ConstraintOverrides) -> SubConstraints {
        if let Some(v) = o.file_scope {
            self.file_scope = v;
        }
        if let Some(v) = o.network {
            self.network = v;
        }
        if let Some(v) = o.terminal {
            self.terminal = v;
        }
        if let Some(v) = o.git {
            self.git = v;
        }
        if let Some(v) = o.code_execution {
            self.code_execution = v;
        }
        if let Some(v) = &o.requires_approval {
            self.requires_approval = v.clone();
        }
        if let Some(v) = &o.restricted_commands {
            self.restricted_commands = v.clone();
        }
        self
    }
}
