//! Signing a component: what `warden sign` and the build's development
//! signing do.

use std::path::Path;

use warden_signing::{PluginSignature, SecretKey};

use crate::{RegistryError, digest_of, signature_path};

/// Signs the component at `path` with `key` and writes `PATH.sig`;
/// returns the signature.
pub fn sign_file(path: &Path, key: &SecretKey) -> Result<PluginSignature, RegistryError> {
    let bytes = std::fs::read(path).map_err(|source| RegistryError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let signature = PluginSignature::sign(&digest_of(path, &bytes)?, key);
    let sig = signature_path(path);
    crate::fsutil::write_atomic(&sig, signature.to_text().as_bytes())?;
    Ok(signature)
}
