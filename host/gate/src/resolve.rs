//! Symlink resolution for path specifiers.
//!
//! Attack: `docs/link -> ../secrets` makes `docs/link/key` read like a path
//! the rules allow while the file opened is one they deny. The policy
//! engine does no I/O, so the gate maps the guest path to the host through
//! the call's grants, resolves it as far as it exists, and maps it back;
//! the engine then checks both forms.

use std::path::{Path, PathBuf};

use warden_api::Grants;

/// The symlink-resolved form of `path` (absolute, normalised, in the guest
/// namespace), or `None` when nothing could be resolved. A link leading
/// outside every grant resolves to its host path, which no workspace rule
/// covers.
pub fn resolve(path: &str, grants: &Grants) -> Option<String> {
    let grant = grants
        .fs
        .iter()
        .filter(|g| warden_policy::path::is_within(path, &g.guest_path))
        .max_by_key(|g| g.guest_path.len())?;
    let rel = path
        .strip_prefix(grant.guest_path.trim_end_matches('/'))?
        .trim_start_matches('/');
    let host = grant.host_path.join(rel);
    let resolved = canonicalize_existing(&host)?;
    let root = grant.host_path.canonicalize().ok()?;
    Some(match resolved.strip_prefix(&root) {
        Ok(inside) if inside.as_os_str().is_empty() => grant.guest_path.clone(),
        Ok(inside) => format!(
            "{}/{}",
            grant.guest_path.trim_end_matches('/'),
            inside.to_string_lossy()
        ),
        Err(_) => resolved.to_string_lossy().into_owned(),
    })
}

/// Canonicalises the longest existing ancestor and re-attaches the rest.
fn canonicalize_existing(path: &Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(c) = cur.canonicalize() {
            return Some(missing.iter().rev().fold(c, |acc: PathBuf, m| acc.join(m)));
        }
        missing.push(cur.file_name()?.to_owned());
        cur = cur.parent()?.to_path_buf();
    }
}
