//! The git sub-constraint: which version-control operations an agent's
//! git access level permits, and the force push as a circuit breaker.
//!
//! Attack: an agent at a limited git level reaching further than the
//! level says — publishing work (push), rewriting history (commit,
//! restore, reset), or pulling in a remote (clone, fetch) — through a tool
//! whose action type alone cannot tell these apart (`vcs:read` covers both
//! `status` and `clone`; `vcs:commit` both `commit` and `reset --hard`).
//! Each call carries the operation it performs ([`VcsOp`], per call: a
//! push with `force` is a [`VcsOp::ForcePush`]); one table decides per
//! level. A version-control tool that declares no operation is judged as
//! the most far-reaching operation of its action type, never the least.

use serde::{Deserialize, Serialize};

use crate::constraints::GitAccess;

/// What one version-control call does to a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VcsOp {
    /// Reads the local repository: status, log, diff, show, branch list.
    Read,
    /// Reads from a remote into the workspace: clone, fetch.
    Fetch,
    /// A [`VcsOp::Fetch`] from a host the operator allowlisted for git
    /// (`[sandbox.git] allow-hosts`): the same reach, so the same levels,
    /// but default and accept-edits modes run it without asking (spec 3.5).
    FetchAllowlisted,
    /// Creates or switches a local branch.
    Branch,
    /// Deletes a local branch.
    BranchDelete,
    /// Records local work: add and commit.
    Commit,
    /// Discards local work: restore, reset.
    Discard,
    /// Publishes commits to a remote.
    Push,
    /// A push that may overwrite the remote branch's history.
    ForcePush,
}

impl VcsOp {
    /// The operation assumed for a version-control tool that declares
    /// none: the most far-reaching one its action type covers (`None` for
    /// an action type outside `vcs:*`, which the git level does not judge).
    pub fn assumed_for(action_type: &str) -> Option<VcsOp> {
        Some(match action_type {
            "vcs:read" => VcsOp::Fetch,
            "vcs:branch" => VcsOp::BranchDelete,
            "vcs:commit" => VcsOp::Discard,
            "vcs:push" => VcsOp::ForcePush,
            _ => return None,
        })
    }

    /// How decisions name the operation.
    pub fn describe(self) -> &'static str {
        match self {
            VcsOp::Read => "reads the repository",
            VcsOp::Fetch => "fetches from a remote",
            VcsOp::FetchAllowlisted => "fetches from a remote the operator allowlisted",
            VcsOp::Branch => "creates or switches a branch",
            VcsOp::BranchDelete => "deletes a branch",
            VcsOp::Commit => "commits",
            VcsOp::Discard => "discards work (restore or reset)",
            VcsOp::Push => "pushes to a remote",
            VcsOp::ForcePush => "force-pushes to a remote",
        }
    }

    /// The git access levels that permit the operation, as decisions
    /// name them (`local-only` and `read-and-branch` are not ordered:
    /// one never reaches a remote, the other never changes history).
    pub fn permitted_levels(self) -> String {
        [
            (GitAccess::LocalOnly, "`local-only`"),
            (GitAccess::ReadAndBranch, "`read-and-branch`"),
            (GitAccess::Full, "`full`"),
        ]
        .iter()
        .filter(|(a, _)| self.permitted_at(*a))
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" or ")
    }

    /// Whether `access` permits the operation (spec 3.5).
    pub fn permitted_at(self, access: GitAccess) -> bool {
        match access {
            GitAccess::Full => true,
            GitAccess::LocalOnly => matches!(
                self,
                VcsOp::Read | VcsOp::Branch | VcsOp::BranchDelete | VcsOp::Commit
            ),
            GitAccess::ReadAndBranch => matches!(
                self,
                VcsOp::Read
                    | VcsOp::Fetch
                    | VcsOp::FetchAllowlisted
                    | VcsOp::Branch
                    | VcsOp::BranchDelete
            ),
        }
    }

    /// Whether the operation talks to a remote (the network sub-constraint
    /// judges it as it judges web tools).
    pub fn reaches_remote(self) -> bool {
        matches!(
            self,
            VcsOp::Fetch | VcsOp::FetchAllowlisted | VcsOp::Push | VcsOp::ForcePush
        )
    }

    /// Why a force push always needs a person.
    pub(crate) fn breaker(self) -> Option<&'static str> {
        (self == VcsOp::ForcePush)
            .then_some("a force push can overwrite the remote branch's history")
    }
}

#[cfg(test)]
mod tests;
