//! `[signers]`: the publishers whose signatures admit a plugin, the
//! revocation lists, and the insecure flag — read from configuration, a
//! signers file (`--signers`) or a bare public key file, and turned into
//! the registry's admission policy.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use warden_registry::AdmissionPolicy;
use warden_signing::{PublicKey, Signers};

use crate::ServerError;
use crate::config::read_toml;

/// The publishers whose signatures admit a plugin, and the revocation
/// lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SignersConfig {
    /// Trusted publishers.
    #[serde(default)]
    pub publishers: Vec<PublisherConfig>,
    /// Key ids (16 hex digits) whose signatures are refused.
    #[serde(default)]
    pub revoked_keys: Vec<String>,
    /// Component digests (`sha256:...`, as `warden verify` prints) refused
    /// however they are signed.
    #[serde(default)]
    pub revoked_digests: Vec<String>,
    /// INSECURE, for development only: admit plugins that carry no
    /// signature. Tampered or wrongly signed plugins are still refused.
    #[serde(default)]
    pub insecure_allow_unsigned: bool,
}

/// A publisher name and its public key file (as `warden keygen` writes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PublisherConfig {
    pub name: String,
    /// The `.pub` file (relative paths resolve against this file).
    pub key: PathBuf,
}

impl SignersConfig {
    /// Reads a signers file (`--signers`): the keys of `[signers]` at top
    /// level — or a publisher's public key file itself (`warden keygen`'s
    /// `KEY.pub`), which trusts that one publisher, named after the file.
    pub fn load(path: &Path) -> Result<SignersConfig, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|source| ServerError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if PublicKey::from_text(&text).is_ok() {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| n.trim_end_matches(".pub").trim_end_matches(".key"))
                .filter(|n| !n.is_empty())
                .unwrap_or("publisher")
                .to_owned();
            return Ok(SignersConfig {
                publishers: vec![PublisherConfig {
                    name,
                    key: path.to_path_buf(),
                }],
                ..SignersConfig::default()
            });
        }
        let mut signers: SignersConfig = read_toml(path)?;
        signers.resolve_paths(path.parent().unwrap_or(Path::new(".")));
        Ok(signers)
    }

    pub(crate) fn resolve_paths(&mut self, base: &Path) {
        for p in &mut self.publishers {
            if p.key.is_relative() {
                p.key = base.join(&p.key);
            }
        }
    }

    /// These signers plus `other`'s publishers and revocations (the
    /// insecure flag is set if either sets it).
    pub fn merge(mut self, other: SignersConfig) -> SignersConfig {
        self.publishers.extend(other.publishers);
        self.revoked_keys.extend(other.revoked_keys);
        self.revoked_digests.extend(other.revoked_digests);
        self.insecure_allow_unsigned |= other.insecure_allow_unsigned;
        self
    }

    /// The admission policy these signers describe; a key file that cannot
    /// be read or parsed stops with its path.
    pub fn admission(&self) -> Result<AdmissionPolicy, ServerError> {
        let mut signers = Signers::new();
        for (i, p) in self.publishers.iter().enumerate() {
            let at = format!("signers.publishers[{i}] (`{}`)", p.name);
            let text = std::fs::read_to_string(&p.key).map_err(|e| {
                ServerError::config(&at, format!("reading the key {}: {e}", p.key.display()))
            })?;
            let key = PublicKey::from_text(&text).map_err(|e| {
                ServerError::config(
                    &at,
                    format!("{} is not a warden public key: {e}", p.key.display()),
                )
            })?;
            signers = signers.publisher(&p.name, key);
        }
        for (i, id) in self.revoked_keys.iter().enumerate() {
            let ok = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
            if !ok {
                return Err(ServerError::config(
                    format!("signers.revoked-keys[{i}]"),
                    format!("`{id}` is not a key id (16 hex digits)"),
                ));
            }
            signers = signers.revoke_key(id);
        }
        for (i, d) in self.revoked_digests.iter().enumerate() {
            let ok = d
                .strip_prefix("sha256:")
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            if !ok {
                return Err(ServerError::config(
                    format!("signers.revoked-digests[{i}]"),
                    format!("`{d}` is not `sha256:` and 64 hex digits"),
                ));
            }
            signers = signers.revoke_digest(d);
        }
        if self.insecure_allow_unsigned {
            tracing::warn!(
                "INSECURE: `insecure-allow-unsigned` is set; plugins without a signature will load"
            );
        }
        Ok(AdmissionPolicy {
            signers,
            insecure_allow_unsigned: self.insecure_allow_unsigned,
        })
    }
}
