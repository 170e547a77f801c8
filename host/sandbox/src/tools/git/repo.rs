//! The repository a git call names: where it is for the container and for
//! the host, and its configuration checked before every command.
//!
//! Attack: a repository whose own config runs programs or moves traffic
//! (`core.fsmonitor`, `core.hooksPath`, filters, `diff.external`,
//! `include.path`, `url.*.insteadOf`, `http.proxy`, ...), written by the
//! agent itself through its file tools or brought in by a clone. Before
//! each git command the host reads the files git would read as config
//! (warden-vcs's allowlist, `.git` file pointers and `commondir` kept
//! inside the workspace) and refuses the call naming the first key off
//! the allowlist; git then runs with the neutralising `-c` options on top.

use std::path::PathBuf;

use warden_api::{BackendCall, ErrorType, FsAccess, Grants};
use warden_vcs::{ConfigCheck, RepoConfig, Workspace};

use crate::tools::{Failure, in_workspace_of};

/// A repository inside the call's workspace grant.
#[derive(Debug, Clone)]
pub(super) struct Repo {
    /// As the container sees it (`/workspace/app`).
    pub guest: String,
    /// The same directory on the host.
    host: PathBuf,
    /// The workspace grant's host directory: nothing may lead outside it.
    root: PathBuf,
}

impl Repo {
    /// The repository at workspace-relative `rel` (the workspace itself
    /// when `None`); `write` needs a read-write grant.
    pub fn at(call: &BackendCall<'_>, rel: Option<&str>, write: bool) -> Result<Repo, Failure> {
        Repo::in_grants(call.grants, rel, write)
    }

    /// [`Repo::at`] under `grants`.
    pub fn in_grants(grants: &Grants, rel: Option<&str>, write: bool) -> Result<Repo, Failure> {
        let grant = grants
            .fs
            .iter()
            .find(|g| g.access != FsAccess::None)
            .ok_or_else(|| {
                Failure::new(
                    ErrorType::PermissionDenied,
                    "no_workspace",
                    "the sandbox has no workspace grant: add `grant-fs` under [sandbox]",
                )
            })?;
        if write && grant.access != FsAccess::ReadWrite {
            return Err(Failure::new(
                ErrorType::PermissionDenied,
                "workspace_read_only",
                format!(
                    "the workspace {} is granted read-only; this git operation writes and needs a read-write grant (`:rw`)",
                    grant.guest_path
                ),
            ));
        }
        let (guest, host) = match rel.filter(|r| *r != ".") {
            Some(rel) => (
                in_workspace_of(grants, rel, false)?,
                grant.host_path.join(rel),
            ),
            None => (
                grant.guest_path.trim_end_matches('/').to_owned(),
                grant.host_path.clone(),
            ),
        };
        Ok(Repo {
            guest,
            host,
            root: grant.host_path.clone(),
        })
    }

    /// The workspace directory on the host, for a clone's destination.
    pub fn host_dir(&self) -> &std::path::Path {
        &self.host
    }

    /// Checks the repository's config against the allowlist; the
    /// accepted entries come back.
    pub fn check(&self) -> Result<RepoConfig, Failure> {
        let dot_git = self.host.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_err() {
            return Err(Failure::new(
                ErrorType::ToolError,
                "not_a_repository",
                format!("`{}` is not a git repository (no .git)", self.guest),
            ));
        }
        ConfigCheck::new(&self.root)
            .and_then(|c| c.check(&dot_git))
            .map_err(|e| {
                Failure::new(
                    ErrorType::PermissionDenied,
                    "repo_config_refused",
                    e.to_string(),
                )
            })
    }

    /// The URL the checked config names for `remote` (its first
    /// `remote.<name>.url`, as `git ls-remote --get-url` reads it once
    /// the config passed the allowlist: no `insteadOf` rewrites it).
    pub fn remote_url(config: &RepoConfig, remote: &str) -> Option<String> {
        config
            .values("remote", Some(remote), "url")
            .next()
            .flatten()
            .map(str::to_owned)
    }

    /// Where git runs; commits are made as the agent unless the
    /// repository names its own author.
    pub fn workspace(&self, config: &RepoConfig, agent: &str) -> Result<Workspace, Failure> {
        let ws = Workspace::new(&self.guest).map_err(|e| Failure::args(e.to_string()))?;
        let has = |key| config.values("user", None, key).next().is_some();
        if has("name") && has("email") {
            return Ok(ws);
        }
        let name = if agent.trim().is_empty() {
            "agent"
        } else {
            agent
        };
        ws.with_identity(name, &format!("{}@warden.invalid", slug(name)))
            .map_err(|e| Failure::args(e.to_string()))
    }
}

/// An agent id as the local part of an address.
fn slug(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}
