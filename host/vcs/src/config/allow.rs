//! The keys a repository's own config may hold.
//!
//! Attack: code execution and traffic redirection from repository config,
//! which anyone who can write the workspace can edit: `core.fsmonitor`,
//! `core.hooksPath`, `filter.*`, `diff.external`, `core.sshCommand`,
//! `credential.helper` run programs; `url.*.insteadOf`, `http.proxy`,
//! `remote.*.proxy` move traffic off the pinned address; `include.path`
//! pulls in unchecked files. Chasing that list misses the next key, so
//! this is an allowlist: the keys `git init` and `git clone` write, and a
//! few more that only describe the repository. Everything else is refused.

use super::parse::ConfigEntry;

/// `[core]` keys (no subsection).
const CORE: &[&str] = &[
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "autocrlf",
    "eol",
];

/// `[extensions]` keys: the object format, and `worktreeConfig` (which only
/// makes git read `config.worktree`, itself checked).
const EXTENSIONS: &[&str] = &["objectformat", "worktreeconfig"];

/// `[remote "<name>"]` keys. The URLs are vetted before any network
/// operation; `proxy`, `uploadpack`, `receivepack`, `vcs`, `promisor` and
/// the rest are refused.
const REMOTE: &[&str] = &["url", "pushurl", "fetch"];

const BRANCH: &[&str] = &["remote", "merge", "rebase"];

const USER: &[&str] = &["name", "email"];

/// Whether git may be run on a repository whose config holds `entry`.
pub(crate) fn allowed(entry: &ConfigEntry) -> bool {
    let key = entry.key.as_str();
    match (entry.section.as_str(), entry.subsection.as_deref()) {
        ("core", None) => CORE.contains(&key),
        ("extensions", None) => EXTENSIONS.contains(&key),
        ("user", None) => USER.contains(&key),
        ("remote", Some(name)) => REMOTE.contains(&key) && plain_name(name),
        ("branch", Some(name)) => BRANCH.contains(&key) && plain_name(name),
        _ => false,
    }
}

/// A remote or branch name without control characters or quoting games.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('-')
        && !name
            .chars()
            .any(|c| c.is_control() || c == '"' || c == '\\')
}
