//! Finding the config files git would read for a repository, without
//! leaving the workspace.
//!
//! Attack: a checker pointed elsewhere. A `.git` *file* (`gitdir: …`), a
//! `commondir` file or a symlink can send git to a git directory outside
//! the workspace — one the agent prepared, or the host's own — and a FIFO
//! or device in place of `config` can hang the reader. Every path is
//! canonicalised and must stay under the workspace root; files are opened
//! without following a final symlink and without blocking, must be
//! regular files, and are read up to a size limit.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::error::ConfigViolation;

/// A `.git` file or `commondir` file larger than this is refused.
const MAX_POINTER_BYTES: usize = 4096;

fn io(file: &Path) -> impl FnOnce(std::io::Error) -> ConfigViolation + '_ {
    move |source| ConfigViolation::Io {
        file: file.to_owned(),
        source,
    }
}

/// The canonical form of `path`, which must lie under `root` (canonical).
pub(crate) fn inside(root: &Path, path: &Path) -> Result<PathBuf, ConfigViolation> {
    let canonical = std::fs::canonicalize(path).map_err(io(path))?;
    if !canonical.starts_with(root) {
        return Err(ConfigViolation::Outside {
            path: path.to_owned(),
            root: root.to_owned(),
        });
    }
    Ok(canonical)
}

/// Reads a regular file of at most `limit` bytes; `None` if it does not
/// exist.
pub(crate) fn read_if_present(
    root: &Path,
    path: &Path,
    limit: usize,
) -> Result<Option<Vec<u8>>, ConfigViolation> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path)(e)),
        Ok(_) => {}
    }
    let canonical = inside(root, path)?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(&canonical, flags, Mode::empty())
        .map_err(|e| io(path)(std::io::Error::from(e)))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(io(path))?;
    if !meta.is_file() {
        return Err(ConfigViolation::NotARegularFile {
            file: path.to_owned(),
        });
    }
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    if bytes.len() > limit {
        return Err(ConfigViolation::TooLarge {
            file: path.to_owned(),
            limit,
        });
    }
    Ok(Some(bytes))
}

/// The git directory `dot_git` names: itself when a directory, the target
/// of its `gitdir:` line when a file (git's `read_gitfile_gently`).
pub(crate) fn git_dir(root: &Path, dot_git: &Path) -> Result<PathBuf, ConfigViolation> {
    let canonical = inside(root, dot_git)?;
    if canonical.is_dir() {
        return Ok(canonical);
    }
    let bad = |reason| ConfigViolation::GitFile {
        file: dot_git.to_owned(),
        reason,
    };
    let bytes = read_if_present(root, dot_git, MAX_POINTER_BYTES)?
        .ok_or_else(|| bad("it does not exist"))?;
    let target = pointer(&bytes, b"gitdir: ").ok_or_else(|| bad("not `gitdir: <path>`"))?;
    let base = dot_git.parent().unwrap_or(Path::new("."));
    let dir = inside(root, &base.join(target))?;
    if !dir.is_dir() {
        return Err(bad("its target is not a directory"));
    }
    Ok(dir)
}

/// The common directory of a linked worktree's git directory (its
/// `commondir` file), or the git directory itself.
pub(crate) fn common_dir(root: &Path, git_dir: &Path) -> Result<PathBuf, ConfigViolation> {
    let file = git_dir.join("commondir");
    let Some(bytes) = read_if_present(root, &file, MAX_POINTER_BYTES)? else {
        return Ok(git_dir.to_owned());
    };
    let target = pointer(&bytes, b"").ok_or_else(|| ConfigViolation::GitFile {
        file: file.clone(),
        reason: "not a path",
    })?;
    let dir = inside(root, &git_dir.join(target))?;
    if !dir.is_dir() {
        return Err(ConfigViolation::GitFile {
            file,
            reason: "its target is not a directory",
        });
    }
    Ok(dir)
}

/// The path after `prefix`, trailing CR/LF dropped as git drops them.
fn pointer(bytes: &[u8], prefix: &[u8]) -> Option<PathBuf> {
    let rest = bytes.strip_prefix(prefix)?;
    let end = rest
        .iter()
        .rposition(|b| *b != b'\n' && *b != b'\r')
        .map_or(0, |i| i + 1);
    let path = std::str::from_utf8(&rest[..end]).ok()?;
    if path.is_empty() || path.chars().any(char::is_control) {
        return None;
    }
    Some(PathBuf::from(path))
}
