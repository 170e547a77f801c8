//! Writing files so that a reader or a killed writer never sees half of one.

use std::path::{Path, PathBuf};

use crate::RegistryError;

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames
/// it over `path`; the file is made as the umask allows (a signature an
/// author publishes).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    write_with_mode(path, bytes, 0o666)
}

/// [`write_atomic`] for the state directory's own files (installed
/// components, their index, the admission memo): readable and writable
/// by the host's user only, from the moment the file exists.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    write_with_mode(path, bytes, 0o600)
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), RegistryError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}-{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RegistryError::store(path, e)
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::{write_atomic, write_private};

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// Another local user reads no installed component, index or memo,
    /// whatever the umask lets through, even if the directory's mode is
    /// widened.
    #[test]
    fn the_state_directorys_files_are_the_hosts_users_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("index.json");
        write_private(&file, b"{}").unwrap();
        assert_eq!(mode(&file), 0o600);
        // Replaced, not widened.
        write_private(&file, b"{\"plugins\":[]}").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read(&file).unwrap(), b"{\"plugins\":[]}");
    }

    /// A signature an author publishes is made as their umask says.
    #[test]
    fn a_published_signature_is_not_narrowed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tool.wasm.sig");
        write_atomic(&file, b"sig").unwrap();
        let umask = {
            let probe = dir.path().join("probe");
            std::fs::write(&probe, b"").unwrap();
            0o666 & !mode(&probe)
        };
        assert_eq!(mode(&file), 0o666 & !umask);
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 2, "no temporary file is left beside it");
    }
}
