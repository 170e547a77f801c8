//! Denied and protected paths inside a container's mounts.
//!
//! Attack: a command in a container reading a file the agent's policy
//! denies (`cat secrets/key` hidden in a build script, `grep -r` over the
//! workspace), or changing what runs later (a git hook, `.git/config`,
//! Warden's own config) in a call nobody approved. The host cannot check
//! each open of an arbitrary program, so the mounts do: when a container
//! is created, its granted directories are walked, every denied path
//! found is covered by an empty read-only mount (a tmpfs over a directory,
//! `/dev/null` over a file), and every protected path inside a read-write
//! mount is mounted read-only over itself — unless a person approved the
//! call, which then runs in a container of its own so the writable view
//! never outlives it. Paths created after the container started are not
//! masked: the decision still checks every path a call names.

use std::path::{Path, PathBuf};

use warden_api::PathGuard;

use crate::SandboxError;
use crate::spec::MountSpec;

/// Entries walked at most per container; past it the container is refused
/// rather than started with paths left unmasked.
pub const MAX_ENTRIES: usize = 1_000_000;

/// What to lay over a container's granted mounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Masks {
    /// Denied directories (guest paths): an empty read-only tmpfs each.
    pub hidden_dirs: Vec<String>,
    /// Denied files (guest paths): `/dev/null`, read-only, each.
    pub hidden_files: Vec<String>,
    /// Protected paths in read-write mounts: mounted read-only over
    /// themselves.
    pub read_only: Vec<MountSpec>,
}

impl Masks {
    /// The masks for `mounts` under `guard`; protected paths stay writable
    /// when `guard` says a person approved the call.
    pub fn find(mounts: &[MountSpec], guard: &dyn PathGuard) -> Result<Masks, SandboxError> {
        let mut masks = Masks::default();
        let mut budget = MAX_ENTRIES;
        let keep_protected = !guard.approved();
        for m in mounts {
            let mut stack = vec![(m.host.clone(), m.guest.clone())];
            while let Some((host, guest)) = stack.pop() {
                let Ok(meta) = std::fs::symlink_metadata(&host) else {
                    continue;
                };
                // A symlink is the file it names, masked where that lies.
                if meta.file_type().is_symlink() {
                    continue;
                }
                if guard.denied(&guest).is_some() {
                    if meta.is_dir() {
                        masks.hidden_dirs.push(guest);
                    } else {
                        masks.hidden_files.push(guest);
                    }
                    continue;
                }
                if keep_protected && !m.read_only && guard.protected(&guest).is_some() {
                    masks.read_only.push(MountSpec {
                        host,
                        guest,
                        read_only: true,
                    });
                    continue;
                }
                if meta.is_dir() {
                    push_children(&host, &guest, &mut stack, &mut budget)?;
                }
            }
        }
        Ok(masks)
    }

    pub fn is_empty(&self) -> bool {
        self.hidden_dirs.is_empty() && self.hidden_files.is_empty() && self.read_only.is_empty()
    }
}

fn push_children(
    host: &Path,
    guest: &str,
    stack: &mut Vec<(PathBuf, String)>,
    budget: &mut usize,
) -> Result<(), SandboxError> {
    let Ok(entries) = std::fs::read_dir(host) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return Err(SandboxError::Grant {
                reason: format!(
                    "the granted directories hold more than {MAX_ENTRIES} entries, too many to mask \
                     the agent's denied and protected paths in; grant a smaller directory"
                ),
            });
        }
        *budget -= 1;
        // A name that is not UTF-8 matches no pattern as itself; its
        // contents may (a directory), so it is walked under a lossy name.
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = if guest.ends_with('/') {
            format!("{guest}{name}")
        } else {
            format!("{guest}/{name}")
        };
        stack.push((entry.path(), child));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Guard {
        approved: bool,
    }

    impl PathGuard for Guard {
        fn denied(&self, path: &str) -> Option<String> {
            (path.ends_with("/secrets") || path.ends_with(".env")).then(|| "denied".into())
        }
        fn protected(&self, path: &str) -> Option<String> {
            path.ends_with("/.git/hooks").then(|| "protected".into())
        }
        fn effects(&self) -> warden_api::Effects {
            if self.approved {
                warden_api::Effects::Approved
            } else {
                warden_api::Effects::Unattended
            }
        }
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for d in ["secrets/deep", "app/secrets", ".git/hooks", "src"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        for f in [
            "secrets/deep/key",
            "app/.env",
            ".git/hooks/pre-commit",
            "src/a.rs",
        ] {
            std::fs::write(p.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(p.join("app/.env"), p.join("link.env")).unwrap();
        dir
    }

    fn mount(dir: &Path, read_only: bool) -> MountSpec {
        MountSpec {
            host: dir.to_path_buf(),
            guest: "/workspace".into(),
            read_only,
        }
    }

    #[test]
    fn denied_paths_are_hidden_and_protected_ones_read_only() {
        let dir = tree();
        let m = Masks::find(&[mount(dir.path(), false)], &Guard { approved: false }).unwrap();
        let mut hidden = m.hidden_dirs.clone();
        hidden.sort();
        assert_eq!(hidden, ["/workspace/app/secrets", "/workspace/secrets"]);
        assert_eq!(m.hidden_files, ["/workspace/app/.env"]);
        assert_eq!(m.read_only.len(), 1);
        assert_eq!(m.read_only[0].guest, "/workspace/.git/hooks");
        assert_eq!(m.read_only[0].host, dir.path().join(".git/hooks"));
    }

    #[test]
    fn an_approved_call_may_change_protected_paths_but_never_see_denied_ones() {
        let dir = tree();
        let m = Masks::find(&[mount(dir.path(), false)], &Guard { approved: true }).unwrap();
        assert!(m.read_only.is_empty());
        assert_eq!(m.hidden_files, ["/workspace/app/.env"]);
    }

    #[test]
    fn a_read_only_mount_needs_no_protection_of_its_own() {
        let dir = tree();
        let m = Masks::find(&[mount(dir.path(), true)], &Guard { approved: false }).unwrap();
        assert!(m.read_only.is_empty());
        assert_eq!(m.hidden_dirs.len(), 2);
    }
}
