//! The host's signing key, generated once into the state directory.
//!
//! Attack: someone who can write the state directory (but not read the
//! key) forging audit records; the key file is created owner-only (0600),
//! narrowed to 0600 when found wider, and never rewritten.

use std::io::Write;
use std::path::Path;

use warden_signing::SecretKey;

use crate::StoreError;

/// Reads `path`, or creates it with a fresh key (mode 0600) when missing.
pub fn host_key(path: &Path) -> Result<SecretKey, StoreError> {
    let err = |detail: String| StoreError::Key {
        path: path.to_path_buf(),
        detail,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            crate::private::private_file(path)?;
            return SecretKey::from_text(&text).map_err(|e| err(e.to_string()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e.to_string())),
    }
    let key = SecretKey::generate().map_err(|e| err(e.to_string()))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| err(e.to_string()))?;
    file.write_all(key.to_text().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| err(e.to_string()))?;
    Ok(key)
}

/// A key that must already exist at `path` (a deployment's audit root,
/// made with `warden keygen` and handed to each replica): never created
/// here, since a replica making its own root would endorse itself.
pub fn existing_key(path: &Path) -> Result<SecretKey, StoreError> {
    let err = |detail: String| StoreError::Key {
        path: path.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    crate::private::private_file(path)?;
    SecretKey::from_text(&text).map_err(|e| err(e.to_string()))
}
