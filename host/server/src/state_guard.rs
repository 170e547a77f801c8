//! Directory grants never reach the host's own state.
//!
//! Attack: a tool granted a directory that holds the state directory (the
//! everyday `--grant-fs "$PWD"` with the state in `./.warden`) lists and
//! reads `host.key` — and with it forges audit records and argument
//! fingerprints — or, under a read-write grant, rewrites the database or
//! the compiled code in the compile cache; a grant inside the state
//! directory does the same from below. Every directory grant, from every
//! source (`--grant-fs`, `[[plugins]] grant-fs`, `[plugin-grants]`,
//! `[sandbox] grant-fs`), is compared with the state directory once both
//! are canonicalised — a state directory that does not exist yet through
//! its nearest existing ancestor — and one that contains it or lies inside
//! it is refused at load, naming both.

use std::path::{Component, Path, PathBuf};

use warden_api::Grants;

/// `path` made absolute with symlinks resolved as far as it exists; the
/// part that does not exist yet is appended with `.` and `..` resolved
/// lexically.
pub fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest: Vec<Component<'_>> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Refuses any directory grant in `grants` that contains the state
/// directory `state` or lies inside it; `source` says where the grant came
/// from (`--grant-fs`, `config: at plugins[0]`, ...).
pub fn check(state: &Path, grants: &Grants, source: &str) -> Result<(), crate::ServerError> {
    let state = resolve(state);
    for grant in &grants.fs {
        let granted = resolve(&grant.host_path);
        let relation = if state.starts_with(&granted) {
            "contains"
        } else if granted.starts_with(&state) {
            "lies inside"
        } else {
            continue;
        };
        return Err(crate::ServerError::StateReached(format!(
            "{source}: the directory grant {} {relation} the state directory {}, which holds the \
             host key, the database and compiled code; grant a narrower directory, or keep the \
             state elsewhere (--state-dir, WARDEN_STATE_DIR, or `state-dir` in the config)",
            granted.display(),
            state.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_api::{FsAccess, FsGrant};

    fn grant(dir: &Path) -> Grants {
        Grants {
            fs: vec![FsGrant {
                host_path: dir.to_path_buf(),
                guest_path: "/workspace".into(),
                access: FsAccess::Read,
            }],
            ..Grants::default()
        }
    }

    #[test]
    fn refuses_above_below_and_equal_allows_beside() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        // The state directory does not exist yet.
        let err = check(&state, &grant(root.path()), "--grant-fs").unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("contains the state directory"), "{msg}");
        assert!(
            msg.contains(&resolve(&state).display().to_string()),
            "{msg}"
        );
        std::fs::create_dir_all(state.join("cache")).unwrap();
        let msg = format!(
            "{:#}",
            check(&state, &grant(&state.join("cache")), "x").unwrap_err()
        );
        assert!(msg.contains("lies inside"), "{msg}");
        assert!(check(&state, &grant(&state), "x").is_err());
        let beside = root.path().join("ws");
        std::fs::create_dir_all(&beside).unwrap();
        check(&state, &grant(&beside), "x").unwrap();
        // A prefix that is not a parent is not a match.
        let similar = root.path().join("state2");
        std::fs::create_dir_all(&similar).unwrap();
        check(&state, &grant(&similar), "x").unwrap();
    }

    #[test]
    fn sees_through_symlinks_and_dot_dot() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        // State named through the link and a `..` detour, not yet created.
        let state = link.join("x/../.warden");
        assert!(check(&state, &grant(&real), "x").is_err());
    }
}
