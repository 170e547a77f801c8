//! Publisher key files as `warden keygen` writes them and `warden sign`
//! reads them: the secret key owner-only, never overwritten, and refused
//! when others can read it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use warden_signing::SecretKey;

use crate::ServerError;

/// The public key file beside a secret key file.
pub fn public_path(secret: &Path) -> PathBuf {
    let mut name = secret.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

fn key_file(path: &Path, message: impl Into<String>) -> ServerError {
    ServerError::config(path.display().to_string(), message)
}

/// Creates `path` with `text`, failing if it exists; owner-only when
/// `private`.
fn create_new(path: &Path, text: &str, private: bool) -> Result<(), ServerError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(path)
        .map_err(|e| {
            ServerError::io(
                format!(
                    "creating {} (an existing key is never overwritten)",
                    path.display()
                ),
                e,
            )
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| ServerError::io(format!("writing {}", path.display()), e))
}

/// Makes a key pair: the secret in `out` (0600), the public half in
/// `out.pub`; neither may exist yet. Returns the key and the public file.
pub fn keygen(out: &Path) -> Result<(SecretKey, PathBuf), ServerError> {
    let public = public_path(out);
    for path in [out, public.as_path()] {
        if path.exists() {
            return Err(key_file(path, "exists; refusing to overwrite a key"));
        }
    }
    let key = SecretKey::generate().map_err(|e| key_file(out, e.to_string()))?;
    create_new(out, &key.to_text(), true)?;
    create_new(&public, &key.public().to_text(), false)?;
    Ok((key, public))
}

/// Reads a secret key file, refusing one that others can read.
pub fn read_secret(path: &Path) -> Result<SecretKey, ServerError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|source| ServerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(key_file(
            path,
            "is readable by other users; `chmod 600` it first",
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|source| ServerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    SecretKey::from_text(&text).map_err(|e| key_file(path, format!("not a warden secret key: {e}")))
}
