//! Protected and denied paths, for every tool.
//!
//! Attack: reaching a file through a tool whose rules nobody wrote. A deny
//! rule on `fs_read(...)` does not stop `cat ~/.ssh/id_ed25519` in a shell,
//! a `file://` URL in a browser, or code that reads the key; and an agent
//! that may edit its workspace can plant a git hook, rewrite `.git/config`,
//! a shell startup file, Warden's configuration or its own rules files —
//! things that run later, or decide what it may do next. Denied paths
//! (`[protect] read`: credentials by default) are refused to every tool
//! that names them, for reading and writing alike; protected paths
//! (`[protect] write`) can be read, but any write, delete or rename of
//! them asks a person in every mode, autonomous and accept-edits included.
//! The policy sees the paths a call names: file tools' paths, every path
//! word and redirection of a shell line (and of `sh` code), `file://`
//! URLs. What a tool finds by walking a directory it is given is the
//! tool's to filter (the plugin SDK and the sandbox mounts do that).

use std::collections::HashSet;

use warden_shell::CommandLine;
use warden_shell::text_path::expand_home_spellings;

use crate::facts::{Call, Env};
use crate::path::{PathEnv, PathPattern, normalize};
use crate::specifier::Prepared;

/// Credentials no tool may read or write unless the operator says so.
pub const DEFAULT_READ: &[&str] = &[
    "~/.ssh/id_rsa",
    "~/.ssh/id_dsa",
    "~/.ssh/id_ecdsa",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ecdsa_sk",
    "~/.ssh/id_ed25519_sk",
    "~/.aws/credentials",
    "~/.config/gcloud/",
    "~/.azure/",
    "~/.kube/config",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pgpass",
    "~/.npmrc",
    "~/.pypirc",
];

/// What runs later or decides what an agent may do: readable, but every
/// change asks a person.
pub const DEFAULT_WRITE: &[&str] = &[
    "//**/.git/hooks/",
    "//**/.git/config",
    "//**/warden.toml",
    "//**/.warden/",
    "~/.ssh/",
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.zshrc",
    "~/.zshenv",
    "~/.zprofile",
    "~/.config/fish/",
    "//etc/profile",
    "//etc/bash.bashrc",
    "//**/CLAUDE.md",
    "//**/AGENTS.md",
    "//**/.cursorrules",
    "//**/.claude/",
    "//**/.github/copilot-instructions.md",
];

/// One list of patterns, with a quick test that skips paths none of them
/// can match.
#[derive(Debug, Clone, Default)]
struct Patterns {
    list: Vec<(String, PathPattern)>,
    /// A literal segment each pattern's paths contain; patterns without
    /// one are always tried.
    keys: HashSet<String>,
    unkeyed: bool,
}

impl Patterns {
    fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Patterns {
        let mut p = Patterns::default();
        for text in texts {
            let pattern = PathPattern::parse(text);
            match pattern.literal_segment() {
                Some(key) => {
                    p.keys.insert(key.to_owned());
                }
                None => p.unkeyed = true,
            }
            p.list.push((text.to_owned(), pattern));
        }
        p
    }

    /// The pattern `path` (absolute, normalised) falls under, if any.
    fn find(&self, path: &str, env: &PathEnv<'_>) -> Option<&str> {
        let glob = path.contains(['*', '?', '[']);
        if !glob && !self.unkeyed && !path.split('/').any(|s| self.keys.contains(s)) {
            return None;
        }
        self.list
            .iter()
            .find(|(_, p)| p.may_match(path, env))
            .map(|(t, _)| t.as_str())
    }
}

/// The denied and protected paths of a policy.
#[derive(Debug, Clone)]
pub struct Protection {
    read: Patterns,
    write: Patterns,
    /// The operator's own entries, kept to derive variants.
    own_read: Vec<String>,
    own_write: Vec<String>,
}

impl Default for Protection {
    fn default() -> Self {
        Protection::new(&[], &[])
    }
}

impl Protection {
    /// The defaults plus the operator's own entries.
    pub fn new(read: &[String], write: &[String]) -> Protection {
        Protection {
            own_read: read.to_vec(),
            own_write: write.to_vec(),
            read: Patterns::new(
                DEFAULT_READ
                    .iter()
                    .copied()
                    .chain(read.iter().map(String::as_str)),
            ),
            write: Patterns::new(
                DEFAULT_WRITE
                    .iter()
                    .copied()
                    .chain(write.iter().map(String::as_str)),
            ),
        }
    }
}

impl Protection {
    /// This protection with more denied paths (the path specifiers of deny
    /// rules on file tools, which deny the path to every tool).
    pub fn with_denied(&self, more: &[String]) -> Protection {
        let mut read = self.own_read.clone();
        read.extend(more.iter().cloned());
        Protection::new(&read, &self.own_write)
    }

    /// The `[protect] read` pattern `path` falls under, if any: `path` is
    /// made absolute against `env`'s working directory first.
    pub fn denied(&self, path: &str, env: &Env<'_>) -> Option<&str> {
        find(&self.read, path, env)
    }

    /// The `[protect] write` pattern `path` falls under, if any (made
    /// absolute as in [`Protection::denied`]).
    pub fn protected(&self, path: &str, env: &Env<'_>) -> Option<&str> {
        find(&self.write, path, env)
    }
}

/// The pattern of `patterns` that `path`, made absolute against `env`,
/// falls under.
fn find<'p>(patterns: &'p Patterns, path: &str, env: &Env<'_>) -> Option<&'p str> {
    let path = normalize(path, env.cwd).ok()?;
    let penv = PathEnv {
        workspace: env.workspace,
        cwd: env.cwd,
        home: env.home,
    };
    patterns.find(&path, &penv)
}

/// What a protected or denied path did to a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hit {
    /// A denied path is named: `(path, pattern)`.
    Denied(String, String),
    /// A protected path would change: `(path, pattern)`.
    Protected(String, String),
}

impl Protection {
    /// The first denied path the call names, else the first protected
    /// path it would change.
    pub(crate) fn check(
        &self,
        call: &Call<'_>,
        prepared: &Prepared<'_>,
        env: &Env<'_>,
    ) -> Option<Hit> {
        let penv = PathEnv {
            workspace: env.workspace,
            cwd: env.cwd,
            home: env.home,
        };
        let mut protected = None;
        let mut denied = None;
        let mut look = |path: &str, writes: bool| {
            if denied.is_some() {
                return;
            }
            if let Some(p) = self.read.find(path, &penv) {
                denied = Some(Hit::Denied(path.to_owned(), p.to_owned()));
            } else if writes
                && protected.is_none()
                && let Some(p) = self.write.find(path, &penv)
            {
                protected = Some(Hit::Protected(path.to_owned(), p.to_owned()));
            }
        };
        match prepared {
            Prepared::Path { paths, .. } => {
                for path in paths {
                    look(path, call.tool.side_effect);
                }
            }
            Prepared::Shell { line, .. } => {
                let writes = !line.is_read_only();
                shell_paths(line, env, &mut |path, is_write| {
                    look(path, writes || is_write)
                });
            }
            Prepared::Plain(text) => {
                if let Some(path) = file_url(text) {
                    look(&path, false);
                }
            }
            Prepared::None | Prepared::Opaque(_) => {}
        }
        denied.or(protected)
    }
}

/// The path of a `file://` URL, normalised.
fn file_url(text: &str) -> Option<String> {
    let rest = text.trim().strip_prefix("file://")?;
    let path = rest.split(['?', '#']).next()?;
    let path = path.strip_prefix("localhost").unwrap_or(path);
    normalize(path, "/").ok()
}

/// Every path a shell line names: argument words (an option's value after
/// `=` too) and redirection targets, with whether the name is written.
fn shell_paths(line: &CommandLine<'_>, env: &Env<'_>, f: &mut impl FnMut(&str, bool)) {
    for sub in line.subcommands() {
        for word in sub.words().iter().skip(1) {
            let word = match word.split_once('=') {
                Some((option, value)) if option.starts_with('-') => value,
                _ if word.starts_with('-') => continue,
                _ => word,
            };
            name(word, env, false, f);
        }
        for r in sub.redirects() {
            name(&r.target, env, r.writes_file(), f);
        }
        for nested in sub.nested() {
            shell_paths(nested, env, f);
        }
    }
}

fn name(word: &str, env: &Env<'_>, writes: bool, f: &mut impl FnMut(&str, bool)) {
    if word.is_empty() || word.contains("://") {
        return;
    }
    // `$HOME/.aws/credentials` and `${HOME}/...` name the same file as `~/.aws/credentials`.
    let Some(expanded) = expand_home_spellings(word, Some(env.home)) else {
        return;
    };
    // A glob names what it may expand to (see `PathPattern::may_match`).
    if let Ok(path) = normalize(&expanded, env.cwd) {
        f(&path, writes);
    }
}

#[cfg(test)]
mod tests;
