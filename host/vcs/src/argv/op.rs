//! The git operations an agent can ask for, with the values it supplied
//! (checked when the invocation is built, in `values`).

/// Record format of `git log` (fields split by US, records by RS).
pub const LOG_FORMAT: &str = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e";

/// How far `git reset` moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetMode {
    Soft,
    Mixed,
    Hard,
    Keep,
}

impl ResetMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ResetMode::Soft => "soft",
            ResetMode::Mixed => "mixed",
            ResetMode::Hard => "hard",
            ResetMode::Keep => "keep",
        }
    }
}

/// One git operation with the values an agent supplied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GitOp {
    Status {
        paths: Vec<String>,
    },
    Log {
        rev: Option<String>,
        max_count: u32,
        paths: Vec<String>,
    },
    Diff {
        from: Option<String>,
        to: Option<String>,
        staged: bool,
        paths: Vec<String>,
    },
    Show {
        rev: String,
    },
    BranchList,
    /// The branch `HEAD` names (also before its first commit); git exits
    /// non-zero when `HEAD` is detached.
    CurrentBranch,
    BranchCreate {
        name: String,
        start: Option<String>,
    },
    Switch {
        name: String,
        create: bool,
    },
    BranchDelete {
        name: String,
        force: bool,
    },
    /// Stage `paths`; everything when empty.
    Add {
        paths: Vec<String>,
    },
    Commit {
        message: String,
    },
    Restore {
        paths: Vec<String>,
        staged: bool,
        source: Option<String>,
    },
    Reset {
        mode: ResetMode,
        rev: String,
    },
    /// Clone the vetted URL into `dest` (relative to the workspace).
    Clone {
        dest: String,
        depth: Option<u32>,
    },
    /// Fetch the vetted URL into `refs/remotes/<remote>/*`.
    Fetch {
        remote: String,
    },
    /// Push `branch` to the same branch at the vetted URL.
    Push {
        remote: String,
        branch: String,
        force: bool,
    },
    /// `ls-remote --get-url <remote>`: the URL git would use, to be vetted.
    GetUrl {
        remote: String,
    },
}

impl GitOp {
    /// The git subcommand, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            GitOp::Status { .. } => "status",
            GitOp::Log { .. } => "log",
            GitOp::Diff { .. } => "diff",
            GitOp::Show { .. } => "show",
            GitOp::BranchList | GitOp::BranchCreate { .. } | GitOp::BranchDelete { .. } => "branch",
            GitOp::Switch { .. } => "switch",
            GitOp::CurrentBranch => "symbolic-ref",
            GitOp::Add { .. } => "add",
            GitOp::Commit { .. } => "commit",
            GitOp::Restore { .. } => "restore",
            GitOp::Reset { .. } => "reset",
            GitOp::Clone { .. } => "clone",
            GitOp::Fetch { .. } => "fetch",
            GitOp::Push { .. } => "push",
            GitOp::GetUrl { .. } => "ls-remote",
        }
    }

    /// Whether the operation talks to a remote (and needs a vetted URL).
    pub fn is_network(&self) -> bool {
        matches!(
            self,
            GitOp::Clone { .. } | GitOp::Fetch { .. } | GitOp::Push { .. }
        )
    }
}
