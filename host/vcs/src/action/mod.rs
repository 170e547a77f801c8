//! What each git operation is, for the policy: its action type, the
//! specifier rules match (`git.push(origin:main)`), whether it talks to a
//! remote, whether it asks by default, and which git access levels permit
//! it (spec 3.5, with the rule that `read-and-branch` denies
//! commits and pushes).

use crate::argv::GitOp;
use crate::url::GitUrl;

/// The git sub-constraint levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GitLevel {
    LocalOnly,
    ReadAndBranch,
    Full,
}

/// Whether a call asks a person by default (standard level, default mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    Never,
    /// Asks unless the remote's host is on the git hostname allowlist.
    UnlessHostAllowlisted,
    Always,
    /// A circuit breaker: asks in every mode, autonomous included.
    CircuitBreaker,
}

/// The policy facts of one git operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VcsAction {
    /// `vcs:read`, `vcs:commit`, `vcs:push` or `vcs:branch`.
    pub action_type: &'static str,
    pub specifier: String,
    pub network: bool,
    /// Discards work (restore, reset, branch delete, force push).
    pub destructive: bool,
    pub prompt: Prompt,
    local_only: bool,
    read_and_branch: bool,
}

impl VcsAction {
    /// Whether `level` permits the operation at all.
    pub fn permitted_at(&self, level: GitLevel) -> bool {
        match level {
            GitLevel::LocalOnly => self.local_only,
            GitLevel::ReadAndBranch => self.read_and_branch,
            GitLevel::Full => true,
        }
    }
}

/// The policy facts of `op`. `url` is the remote of a clone (its
/// specifier is `host/path`); `head` is the current branch (a commit's
/// specifier; `HEAD` when detached or unknown).
pub fn vcs_action(op: &GitOp, url: Option<&GitUrl>, head: Option<&str>) -> VcsAction {
    use Prompt::*;
    // (action type, specifier, destructive, prompt, local_only, read_and_branch)
    let (action_type, specifier, destructive, prompt, local_only, read_and_branch) = match op {
        GitOp::Status { paths } => ("vcs:read", joined(paths, "."), false, Never, true, true),
        GitOp::Log { rev, .. } => (
            "vcs:read",
            rev_or_head(rev.as_deref()),
            false,
            Never,
            true,
            true,
        ),
        GitOp::Diff { from, to, .. } => {
            let spec = match (from, to) {
                (Some(a), Some(b)) => format!("{a}..{b}"),
                (Some(a), None) | (None, Some(a)) => a.clone(),
                (None, None) => "HEAD".to_owned(),
            };
            ("vcs:read", spec, false, Never, true, true)
        }
        GitOp::Show { rev } => ("vcs:read", rev.clone(), false, Never, true, true),
        GitOp::GetUrl { remote } => ("vcs:read", remote.clone(), false, Never, true, true),
        GitOp::CurrentBranch => ("vcs:read", "HEAD".to_owned(), false, Never, true, true),
        GitOp::Clone { .. } => {
            let spec = url.map_or_else(String::new, GitUrl::specifier);
            ("vcs:read", spec, false, UnlessHostAllowlisted, false, true)
        }
        GitOp::Fetch { remote } => (
            "vcs:read",
            remote.clone(),
            false,
            UnlessHostAllowlisted,
            false,
            true,
        ),
        GitOp::BranchList => ("vcs:branch", "list:*".to_owned(), false, Never, true, true),
        GitOp::BranchCreate { name, .. } => (
            "vcs:branch",
            format!("create:{name}"),
            false,
            Never,
            true,
            true,
        ),
        GitOp::Switch {
            name,
            create: false,
        } => (
            "vcs:branch",
            format!("switch:{name}"),
            false,
            Never,
            true,
            true,
        ),
        GitOp::Switch { name, create: true } => (
            "vcs:branch",
            format!("create:{name}"),
            false,
            Never,
            true,
            true,
        ),
        GitOp::BranchDelete { name, .. } => (
            "vcs:branch",
            format!("delete:{name}"),
            true,
            Always,
            true,
            true,
        ),
        GitOp::Add { .. } | GitOp::Commit { .. } => (
            "vcs:commit",
            head.unwrap_or("HEAD").to_owned(),
            false,
            Never,
            true,
            false,
        ),
        GitOp::Restore { staged, source, .. } => {
            let mode = if *staged { "staged" } else { "worktree" };
            (
                "vcs:commit",
                format!("{mode}:{}", rev_or_head(source.as_deref())),
                true,
                Always,
                false,
                false,
            )
        }
        GitOp::Reset { mode, rev } => (
            "vcs:commit",
            format!("{}:{rev}", mode.as_str()),
            true,
            Always,
            false,
            false,
        ),
        GitOp::Push {
            remote,
            branch,
            force,
        } => {
            let prompt = if *force { CircuitBreaker } else { Always };
            (
                "vcs:push",
                format!("{remote}:{branch}"),
                *force,
                prompt,
                false,
                false,
            )
        }
    };
    VcsAction {
        action_type,
        specifier,
        network: op.is_network(),
        destructive,
        prompt,
        local_only,
        read_and_branch,
    }
}

fn joined(paths: &[String], empty: &str) -> String {
    if paths.is_empty() {
        empty.to_owned()
    } else {
        paths.join(" ")
    }
}

fn rev_or_head(rev: Option<&str>) -> String {
    rev.unwrap_or("HEAD").to_owned()
}

#[cfg(test)]
mod tests;
