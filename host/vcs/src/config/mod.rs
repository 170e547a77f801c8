//! The repository-config check run before every git command: which files
//! git would read as configuration, read safely (`locate`), parsed the way
//! git parses them (`parse`), every key checked against the allowlist
//! (`allow`).

mod allow;
mod locate;
mod parse;

use std::path::{Path, PathBuf};

pub use parse::ConfigEntry;

use crate::error::ConfigViolation;

/// A config file larger than this is refused (a clone writes a few hundred
/// bytes).
pub const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// The checker for repositories under one workspace root: no pointer,
/// symlink or `commondir` may lead outside it.
#[derive(Debug, Clone)]
pub struct ConfigCheck {
    root: PathBuf,
}

/// The entries of a repository's config, every one on the allowlist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoConfig {
    entries: Vec<ConfigEntry>,
}

impl RepoConfig {
    pub fn entries(&self) -> &[ConfigEntry] {
        &self.entries
    }

    /// The values of `section.subsection.key` in file order (git's "last
    /// one wins" is the last item). `section` and `key` are matched
    /// case-insensitively, the subsection exactly.
    pub fn values<'a>(
        &'a self,
        section: &'a str,
        subsection: Option<&'a str>,
        key: &'a str,
    ) -> impl Iterator<Item = Option<&'a str>> + 'a {
        self.entries
            .iter()
            .filter(move |e| {
                e.section.eq_ignore_ascii_case(section)
                    && e.subsection.as_deref() == subsection
                    && e.key.eq_ignore_ascii_case(key)
            })
            .map(|e| e.value.as_deref())
    }
}

impl ConfigCheck {
    /// A checker for repositories under `workspace` (which must exist).
    pub fn new(workspace: &Path) -> Result<ConfigCheck, ConfigViolation> {
        let root = std::fs::canonicalize(workspace).map_err(|source| ConfigViolation::Io {
            file: workspace.to_owned(),
            source,
        })?;
        Ok(ConfigCheck { root })
    }

    /// Checks the repository whose `.git` (directory or `gitdir:` file) is
    /// `dot_git`: the common `config`, every `config.worktree`, and the
    /// linked worktree's own `config` if one exists (read whether or not
    /// `extensions.worktreeConfig` is on — refusing costs nothing, and no
    /// boolean parsing can then differ from git's).
    pub fn check(&self, dot_git: &Path) -> Result<RepoConfig, ConfigViolation> {
        let git_dir = locate::git_dir(&self.root, dot_git)?;
        let common = locate::common_dir(&self.root, &git_dir)?;
        let mut files = vec![common.join("config"), common.join("config.worktree")];
        for own in [git_dir.join("config"), git_dir.join("config.worktree")] {
            if !files.contains(&own) {
                files.push(own);
            }
        }
        let mut entries = Vec::new();
        for file in files {
            let Some(bytes) = locate::read_if_present(&self.root, &file, MAX_CONFIG_BYTES)? else {
                continue;
            };
            let parsed = parse::parse(&bytes).map_err(|e| ConfigViolation::Syntax {
                file: file.clone(),
                line: e.line,
                reason: e.reason,
            })?;
            for entry in parsed {
                if !allow::allowed(&entry) {
                    return Err(ConfigViolation::Key {
                        key: entry.name(),
                        file,
                        line: entry.line,
                    });
                }
                entries.push(entry);
            }
        }
        Ok(RepoConfig { entries })
    }
}

/// Checks the repository at `git_dir` (a `.git` directory or `gitdir:`
/// file) against the allowlist; pointers must stay inside the directory
/// that holds `git_dir`. Use [`ConfigCheck`] to set a wider workspace
/// root (linked worktrees elsewhere in the workspace).
pub fn check_repo_config(git_dir: &Path) -> Result<(), ConfigViolation> {
    let root = git_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    ConfigCheck::new(root)?.check(git_dir).map(|_| ())
}

#[cfg(test)]
mod tests;
