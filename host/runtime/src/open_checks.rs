//! Protected and denied paths, checked on the file actually opened.
//!
//! Attack: the decision judges a path's text, resolved lexically; the
//! guest's open follows whatever a symlink points to at that moment. An
//! agent that can change its workspace (a loop in its own container)
//! flips `link` between a harmless file and `.git/config` while calling
//! `fs_write` on `link`: the decision saw a harmless path, the write lands
//! on a protected one. A symlink to a denied file, or a hard link (a
//! second name with nothing in its text to deny), reads the file the same
//! way; and a hostile plugin never asks the host about any path at all.
//!
//! So every `wasi:filesystem` open and every change of a directory entry
//! of a call with denied or protected paths ([`PathGuard`]) is checked on
//! the host side, on what the OS resolved: the opened descriptor's final
//! path (`/proc/self/fd`), mapped back through the preopened directory
//! that contains it to the guest's namespace, is asked `denied` (any
//! open), and `protected` (opens that write, create or truncate, unless a
//! person approved the call). A file that may be a second name of a
//! denied file — a regular file with more than one link — is refused to
//! every such call: which names a file has elsewhere is not knowable
//! without walking every filesystem, and a hard link has nothing in its
//! own path to deny. The trade-off: trees of hard links (pnpm stores,
//! `cp -al` backups) cannot be opened through WASM tools by agents that
//! have denied paths.
//!
//! What this does not stop: a file renamed to a protected name after it
//! was opened (renaming a protected or denied entry is itself refused
//! here, and containers get those paths read-only).

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use warden_api::{FsAccess, Grants, PathGuard, RequestedCapabilities};

/// What an open or an entry change does to the file it reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// Reads it (or lists it).
    Read,
    /// Writes, creates, truncates, deletes, renames or links it.
    Change,
}

/// One call's checks: its guard and where its preopens are on the host.
#[derive(Debug, Clone)]
pub(crate) struct OpenCheck {
    guard: Arc<dyn PathGuard>,
    preopens: Arc<Preopens>,
}

/// The call's granted directories: host path (as granted) to guest path;
/// the host paths are made canonical on the first check, once per call,
/// because that is what `/proc/self/fd` reports.
#[derive(Debug)]
struct Preopens {
    granted: Vec<(PathBuf, String)>,
    canonical: OnceLock<Vec<(PathBuf, String)>>,
}

impl OpenCheck {
    /// The checks of a call with `guard`, over the directories `grants`
    /// preopen (as [`crate::wasi::build`] grants them: every grant the
    /// plugin's request does not reduce to nothing).
    pub fn new(
        guard: Arc<dyn PathGuard>,
        grants: &Grants,
        requested: &RequestedCapabilities,
    ) -> OpenCheck {
        let granted = grants
            .fs
            .iter()
            .filter(|g| g.access.meet(requested.filesystem) != FsAccess::None)
            .map(|g| (g.host_path.clone(), g.guest_path.clone()))
            .collect();
        OpenCheck {
            guard,
            preopens: Arc::new(Preopens {
                granted,
                canonical: OnceLock::new(),
            }),
        }
    }

    /// Why the opened `file` (whose metadata is `meta`) may not be handed
    /// to the guest for `intent`, or `None`.
    pub fn opened(&self, file: &File, meta: &Metadata, intent: Intent) -> Option<String> {
        let host = match fd_path(file) {
            Ok(path) => path,
            Err(why) => return Some(why),
        };
        if let Some(name) = deleted(&host) {
            // An unlinked name: harmless once the file has no name left;
            // else another name (perhaps a denied one) still reaches it.
            return (meta.nlink() > 0).then(|| {
                format!("`{name}` was removed while it was opened; its file has other names")
            });
        }
        if let Some(why) = self.judge(&host, intent) {
            return Some(why);
        }
        (meta.is_file() && meta.nlink() > 1).then(|| {
            format!(
                "`{}` has {} names (hard links): it may be a denied path under another name, \
                 so tools may not open it",
                self.guest_or_host(&host),
                meta.nlink()
            )
        })
    }

    /// Why the entry `name` of the opened directory `parent` may not be
    /// changed (created, removed, renamed, linked), or `None`.
    pub fn entry(&self, parent: &File, name: &str) -> Option<String> {
        let mut host = match fd_path(parent) {
            Ok(path) => path,
            Err(why) => return Some(why),
        };
        if let Some(dir) = deleted(&host) {
            return Some(format!("`{dir}` was removed while it was opened"));
        }
        host.push(name);
        self.judge(&host, Intent::Change)
    }

    /// The guard's verdict on every guest name of the host path `host`.
    fn judge(&self, host: &Path, intent: Intent) -> Option<String> {
        let mut named = false;
        for (root, guest) in self.preopens.canonical() {
            let Ok(rest) = host.strip_prefix(root) else {
                continue;
            };
            named = true;
            let guest = guest_path(guest, rest);
            if let Some(why) = self.guard.denied(&guest) {
                return Some(why);
            }
            if intent == Intent::Change
                && !self.guard.approved()
                && let Some(why) = self.guard.protected(&guest)
            {
                return Some(why);
            }
        }
        (!named).then(|| {
            format!(
                "`{}` is under no granted directory (it moved since the grant?)",
                host.display()
            )
        })
    }

    /// `host`'s guest path for a message, else the host path itself.
    fn guest_or_host(&self, host: &Path) -> String {
        self.preopens
            .canonical()
            .iter()
            .find_map(|(root, guest)| Some(guest_path(guest, host.strip_prefix(root).ok()?)))
            .unwrap_or_else(|| host.display().to_string())
    }
}

impl Preopens {
    fn canonical(&self) -> &[(PathBuf, String)] {
        self.canonical.get_or_init(|| {
            self.granted
                .iter()
                .map(|(host, guest)| {
                    // A grant that cannot be made canonical keeps its
                    // text: opens under it then match nothing and are
                    // refused, never waved through.
                    let host = std::fs::canonicalize(host).unwrap_or_else(|_| host.clone());
                    (host, guest.clone())
                })
                .collect()
        })
    }
}

fn guest_path(guest: &str, rest: &Path) -> String {
    let rest = rest.to_string_lossy();
    if rest.is_empty() {
        return guest.to_owned();
    }
    let mut path = String::with_capacity(guest.len() + 1 + rest.len());
    path.push_str(guest.trim_end_matches('/'));
    path.push('/');
    path.push_str(&rest);
    path
}

/// The name `host` had before it was unlinked, when the kernel says so.
fn deleted(host: &Path) -> Option<Cow<'_, str>> {
    let text = host.to_str()?;
    text.strip_suffix(" (deleted)").map(Cow::Borrowed)
}

/// Where the OS says `file` is: the final path of its descriptor.
#[cfg(target_os = "linux")]
fn fd_path(file: &File) -> Result<PathBuf, String> {
    use std::os::fd::AsRawFd as _;
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    std::fs::read_link(&link).map_err(|e| {
        format!("the path of an opened file cannot be read ({link}: {e}); the open is refused")
    })
}

#[cfg(not(target_os = "linux"))]
fn fd_path(_file: &File) -> Result<PathBuf, String> {
    Err("this host cannot tell which file a descriptor names; the open is refused".to_owned())
}

#[cfg(test)]
mod tests;
