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
    // A canonical path that begins with the grant's directory proves that
    // directory canonical too (no component of it is a link), so the
    // directory is resolved again only when it is not a prefix: a call
    // inside a grant named by its real path spends no system call on it.
    let inside = match resolved.strip_prefix(&grant.host_path) {
        Ok(inside) => Ok(inside),
        Err(_) => resolved.strip_prefix(grant.host_path.canonicalize().ok()?),
    };
    Some(match inside {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use std::os::unix::fs::symlink;

    use warden_api::{FsAccess, FsGrant, Grants};

    use super::resolve;

    fn grants(host: &std::path::Path) -> Grants {
        Grants {
            fs: vec![FsGrant {
                host_path: host.to_path_buf(),
                guest_path: "/workspace".into(),
                access: FsAccess::Read,
            }],
            ..Grants::default()
        }
    }

    #[test]
    fn a_link_inside_the_grant_resolves_to_its_target_in_the_guest_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        symlink(root.join("secrets"), root.join("innocent")).unwrap();
        let grants = grants(&root);
        assert_eq!(
            resolve("/workspace/innocent/key", &grants).as_deref(),
            Some("/workspace/secrets/key")
        );
        assert_eq!(
            resolve("/workspace", &grants).as_deref(),
            Some("/workspace")
        );
    }

    #[test]
    fn a_grant_named_through_a_link_still_maps_back_to_the_guest() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap().join("real");
        std::fs::create_dir_all(real.join("docs")).unwrap();
        symlink(&real, dir.path().join("alias")).unwrap();
        let grants = grants(&dir.path().join("alias"));
        assert_eq!(
            resolve("/workspace/docs/a.md", &grants).as_deref(),
            Some("/workspace/docs/a.md")
        );
    }

    #[test]
    fn a_link_out_of_the_grant_resolves_to_a_host_path_no_rule_covers() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("ws"), base.join("elsewhere"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        symlink(&outside, root.join("out")).unwrap();
        // A sibling whose name begins with the grant's: not inside it.
        std::fs::create_dir_all(base.join("ws2")).unwrap();
        symlink(base.join("ws2"), root.join("twin")).unwrap();
        let grants = grants(&root);
        let host = |p: &std::path::Path| Some(p.to_string_lossy().into_owned());
        assert_eq!(
            resolve("/workspace/out/x", &grants),
            host(&outside.join("x"))
        );
        assert_eq!(
            resolve("/workspace/twin/x", &grants),
            host(&base.join("ws2/x"))
        );
    }
}
