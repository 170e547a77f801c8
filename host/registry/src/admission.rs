//! Whether a component may load: its detached signature checked against
//! the operator's signers (publisher keys), on the bytes alone, before any of its code
//! runs (compiling runs none; `tools()` runs after this).
//!
//! Attack stopped: loading a component nobody the operator trusts signed —
//! modified on disk or in transit, re-signed by a stranger, signed by a
//! revoked key, or a build revoked by digest. Unsigned components are
//! refused unless the operator spelled out `insecure-allow-unsigned`, and
//! even then a revoked digest is refused.

use std::path::{Path, PathBuf};

use warden_signing::{PluginSignature, Signers, Verified, VerifyError, plugin_digest};

use crate::RegistryError;

/// Which signatures admit a component: the operator's signers (publisher
/// keys and revocations) and the insecure flag.
#[derive(Debug, Clone, Default)]
pub struct AdmissionPolicy {
    pub signers: Signers,
    /// Admit unsigned components (development only; warned about at every
    /// start and in `warden plugin list`).
    pub insecure_allow_unsigned: bool,
}

/// A component that passed the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// `sha256:<hex>` over the component and its manifest.
    pub digest: String,
    /// Who signed it; `None` when admitted unsigned under the insecure flag.
    pub signer: Option<Verified>,
}

/// Where a component's detached signature lives: `FILE.sig`.
pub fn signature_path(component: &Path) -> PathBuf {
    let mut name = component.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// The plugin digest of component bytes (which must hold a manifest).
pub fn digest_of(path: &Path, bytes: &[u8]) -> Result<String, RegistryError> {
    let manifest =
        warden_runtime::manifest_section(bytes).map_err(|reason| RegistryError::NotAPlugin {
            path: path.to_path_buf(),
            reason,
        })?;
    Ok(plugin_digest(bytes, manifest))
}

/// Reads `FILE.sig` beside `path`, if there is one.
pub fn read_signature(path: &Path) -> Result<Option<PluginSignature>, RegistryError> {
    let sig = signature_path(path);
    let text = match std::fs::read_to_string(&sig) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(RegistryError::BadSignatureFile {
                path: path.to_path_buf(),
                sig,
                reason: e.to_string(),
            });
        }
    };
    PluginSignature::from_text(&text)
        .map(Some)
        .map_err(|e| RegistryError::BadSignatureFile {
            path: path.to_path_buf(),
            sig,
            reason: e.to_string(),
        })
}

impl AdmissionPolicy {
    /// Checks component `bytes` (read from `path`) and its signature.
    pub fn admit(
        &self,
        path: &Path,
        bytes: &[u8],
        signature: Option<&PluginSignature>,
    ) -> Result<Admission, RegistryError> {
        let digest = digest_of(path, bytes)?;
        self.admit_digest(path, digest, signature, || {
            warden_runtime::read_manifest(bytes)
                .map(|m| m.plugin.name)
                .unwrap_or_else(|_| "?".into())
        })
    }

    /// [`AdmissionPolicy::admit`] of a component whose plugin `digest` is
    /// known; `plugin` names it in a refusal.
    pub fn admit_digest(
        &self,
        path: &Path,
        digest: String,
        signature: Option<&PluginSignature>,
        plugin: impl FnOnce() -> String,
    ) -> Result<Admission, RegistryError> {
        match self.signers.verify(&digest, signature) {
            Ok(signer) => Ok(Admission {
                digest,
                signer: Some(signer),
            }),
            Err(VerifyError::Unsigned) if self.insecure_allow_unsigned => {
                tracing::warn!(
                    path = %path.display(),
                    "loading an UNSIGNED plugin because `insecure-allow-unsigned` is set"
                );
                Ok(Admission {
                    digest,
                    signer: None,
                })
            }
            Err(source) => Err(RegistryError::Refused {
                path: path.to_path_buf(),
                plugin: plugin(),
                source,
            }),
        }
    }
}
