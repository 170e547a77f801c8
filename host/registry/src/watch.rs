//! Watching a directory of plugins by polling: portable, needs no
//! platform API, and sees a file only once it has stopped changing, so a
//! component still being copied in is never loaded half-written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A change in the watched directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A component (or its signature) appeared or changed and has been
    /// stable for one poll.
    Changed(PathBuf),
    /// A component that was reported before is gone.
    Removed(PathBuf),
}

type Stamp = (u64, Option<SystemTime>, Option<(u64, Option<SystemTime>)>);

/// Polls one directory; [`DirWatcher::scan`] returns what changed since
/// the last call.
#[derive(Debug)]
pub struct DirWatcher {
    dir: PathBuf,
    /// Stamps seen at the previous scan, not yet reported.
    pending: BTreeMap<PathBuf, Stamp>,
    /// Stamps last reported.
    reported: BTreeMap<PathBuf, Stamp>,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    let sig = std::fs::metadata(crate::signature_path(path))
        .ok()
        .map(|m| (m.len(), m.modified().ok()));
    Some((meta.len(), meta.modified().ok(), sig))
}

impl DirWatcher {
    pub fn new(dir: &Path) -> DirWatcher {
        DirWatcher {
            dir: dir.to_path_buf(),
            pending: BTreeMap::new(),
            reported: BTreeMap::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The changes since the last scan. A new or changed file is reported
    /// when two scans in a row saw the same size and times.
    pub fn scan(&mut self) -> Vec<WatchEvent> {
        let mut now: BTreeMap<PathBuf, Stamp> = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for path in entries.filter_map(Result::ok).map(|e| e.path()) {
                if path.extension().is_some_and(|e| e == "wasm")
                    && let Some(s) = stamp(&path)
                {
                    now.insert(path, s);
                }
            }
        }
        let mut events = Vec::new();
        for (path, s) in &now {
            let stable = self.pending.get(path) == Some(s);
            if stable && self.reported.get(path) != Some(s) {
                self.reported.insert(path.clone(), *s);
                events.push(WatchEvent::Changed(path.clone()));
            }
        }
        let gone: Vec<PathBuf> = self
            .reported
            .keys()
            .filter(|p| !now.contains_key(*p))
            .cloned()
            .collect();
        for path in gone {
            self.reported.remove(&path);
            events.push(WatchEvent::Removed(path));
        }
        self.pending = now;
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_stable_files_once_and_removals() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut w = DirWatcher::new(dir.path());
        let a = dir.path().join("a.wasm");
        std::fs::write(&a, b"one")?;
        std::fs::write(dir.path().join("notes.txt"), b"x")?;
        assert!(w.scan().is_empty(), "first sight is not yet stable");
        assert_eq!(w.scan(), vec![WatchEvent::Changed(a.clone())]);
        assert!(w.scan().is_empty(), "reported once");
        std::fs::write(&a, b"two!")?;
        assert!(w.scan().is_empty());
        assert_eq!(w.scan(), vec![WatchEvent::Changed(a.clone())]);
        std::fs::write(crate::signature_path(&a), b"sig")?;
        w.scan();
        assert_eq!(w.scan(), vec![WatchEvent::Changed(a.clone())]);
        std::fs::remove_file(&a)?;
        assert_eq!(w.scan(), vec![WatchEvent::Removed(a)]);
        Ok(())
    }
}
