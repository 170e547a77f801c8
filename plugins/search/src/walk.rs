//! Walking a granted tree for the search tools. Symlinks are never
//! followed — not even ones that stay inside the grant — so a link cannot
//! lead a search outside the tree, and none is searched twice. (WASI
//! refuses a link out of the preopen anyway; this keeps results honest.)
//! The agent's denied paths are skipped, and denied directories are not
//! entered, so their content never reaches a result.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use walkdir::WalkDir;
use warden_sdk::{Context, ToolError};

/// Include and exclude globs, matched against paths relative to the root
/// (`src/main.rs`); a pattern without `/` also matches the file name.
#[derive(Debug)]
pub struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

fn set(patterns: &[String]) -> Result<Option<GlobSet>, ToolError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let glob =
            Glob::new(p).map_err(|e| ToolError::invalid_argument(format!("glob `{p}`: {e}")))?;
        b.add(glob);
        if !p.contains('/') {
            // `*.rs` also matches at any depth.
            let deep = format!("**/{p}");
            b.add(
                Glob::new(&deep)
                    .map_err(|e| ToolError::invalid_argument(format!("glob `{p}`: {e}")))?,
            );
        }
    }
    b.build()
        .map(Some)
        .map_err(|e| ToolError::invalid_argument(format!("globs: {e}")))
}

impl Filter {
    pub fn new(include: &[String], exclude: &[String]) -> Result<Filter, ToolError> {
        Ok(Filter {
            include: set(include)?,
            exclude: set(exclude)?,
        })
    }

    pub fn admits(&self, rel: &Path) -> bool {
        self.include.as_ref().is_none_or(|s| s.is_match(rel))
            && !self.exclude.as_ref().is_some_and(|s| s.is_match(rel))
    }

    /// Whether a directory should be skipped whole (an exclude matches it).
    fn prunes(&self, rel: &Path) -> bool {
        self.exclude.as_ref().is_some_and(|s| s.is_match(rel))
    }
}

/// A file found under the root.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    /// Relative to the root.
    pub rel: PathBuf,
}

/// Regular files (and, with `dirs`, directories) under `root`, sorted,
/// symlinks skipped, excluded directories pruned.
pub fn files(
    ctx: &Context,
    root: &Path,
    filter: &Filter,
    dirs: bool,
) -> Result<Vec<Found>, ToolError> {
    let shown = root.display().to_string();
    let mut out = Vec::new();
    let walker = WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let rel = e.path().strip_prefix(root).unwrap_or(e.path());
            e.depth() == 0
                || !(e.file_type().is_dir() && filter.prunes(rel)) && ctx.denied(e.path()).is_none()
        });
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.depth() == 0 => {
                let io = e
                    .into_io_error()
                    .unwrap_or_else(|| std::io::Error::other("unreadable"));
                return Err(ToolError::io(&shown, &io));
            }
            // An unreadable entry below the root is skipped, not fatal.
            Err(_) => continue,
        };
        if entry.depth() == 0 {
            continue;
        }
        let t = entry.file_type();
        if t.is_symlink() || !(t.is_file() || (dirs && t.is_dir())) {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_path_buf();
        if filter.admits(&rel) {
            out.push(Found {
                path: entry.path().to_path_buf(),
                rel,
            });
        }
    }
    Ok(out)
}
