//! Directory listing. Symlinks are reported, never followed, so a link
//! inside a grant cannot lead the listing elsewhere (WASI would refuse the
//! escape anyway; this keeps the listing honest about what it saw). The
//! agent's denied paths are neither listed nor entered.

use std::fs::Metadata;
use std::path::Path;

use globset::{Glob, GlobMatcher};
use warden_sdk::{Context, ToolError};

use crate::fs::{Entry, EntryKind};

pub fn kind(meta: &Metadata) -> EntryKind {
    let t = meta.file_type();
    if t.is_symlink() {
        EntryKind::Symlink
    } else if t.is_dir() {
        EntryKind::Dir
    } else if t.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

pub fn list(
    ctx: &Context,
    root: &Path,
    shown: &str,
    recursive: bool,
    glob: Option<&str>,
    max: usize,
) -> Result<(Vec<Entry>, bool), ToolError> {
    let matcher: Option<GlobMatcher> = glob
        .map(|g| {
            Glob::new(g)
                .map(|g| g.compile_matcher())
                .map_err(|e| ToolError::invalid_argument(format!("glob `{g}`: {e}")))
        })
        .transpose()?;
    let mut entries = Vec::new();
    let mut pending = vec![String::new()];
    let mut truncated = false;
    while let Some(rel) = pending.pop() {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&rel)
        };
        let shown_dir = if rel.is_empty() {
            shown.to_owned()
        } else {
            format!("{shown}/{rel}")
        };
        let read = std::fs::read_dir(&dir).map_err(|e| ToolError::io(&shown_dir, &e))?;
        for item in read {
            let item = item.map_err(|e| ToolError::io(&shown_dir, &e))?;
            if ctx.denied(&item.path()).is_some() {
                continue;
            }
            let name = item.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let meta = item.metadata().map_err(|e| ToolError::io(&path, &e))?;
            let kind = kind(&meta);
            if recursive && matches!(kind, EntryKind::Dir) {
                pending.push(path.clone());
            }
            if matcher.as_ref().is_some_and(|m| !m.is_match(&path)) {
                continue;
            }
            if entries.len() == max {
                truncated = true;
                continue;
            }
            let size = matches!(kind, EntryKind::File).then(|| meta.len());
            entries.push(Entry { path, kind, size });
        }
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((entries, truncated))
}
