//! Owner-only modes for the state directory and the files in it.
//!
//! Attack: another local account reading the host key (and so forging
//! audit records and argument fingerprints) or the database (pending
//! approvals, stored arguments), or writing either. The state directory
//! is made 0700 and `host.key`, `warden.db` and its `-wal`/`-shm` files
//! 0600 — created that way, and narrowed when they already existed with
//! wider modes (a directory made by an older warden, a restored backup).

use std::path::Path;

use crate::StoreError;

/// Creates `dir` (and its parents) when missing and makes it owner-only
/// (0700), whatever its mode was.
pub fn private_dir(dir: &Path) -> Result<(), StoreError> {
    let err = |source| StoreError::Permissions {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

/// Makes `file` owner-only (0600) when it exists with a wider mode.
pub(crate) fn private_file(file: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let err = |source| StoreError::Permissions {
            path: file.to_path_buf(),
            source,
        };
        match std::fs::metadata(file) {
            Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
                    .map_err(err)?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
    }
    Ok(())
}

/// Creates `file` empty and owner-only when missing (so SQLite, which
/// gives its `-wal` and `-shm` files the database's mode, starts from
/// 0600), then narrows it, `-wal` and `-shm` when they are wider.
pub(crate) fn private_database(file: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(file)
        .map_err(|source| StoreError::Permissions {
            path: file.to_path_buf(),
            source,
        })?;
    private_file(file)?;
    for suffix in ["-wal", "-shm"] {
        let mut name = file.as_os_str().to_owned();
        name.push(suffix);
        private_file(Path::new(&name))?;
    }
    Ok(())
}
