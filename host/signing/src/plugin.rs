//! A plugin's digest and its detached signature file.
//!
//! The digest covers the component bytes and, separately, the manifest of
//! requested capabilities, each length-prefixed under a domain tag, so no
//! two different (component, manifest) pairs share a digest. The signature
//! is over the digest plus the signer's key id, so a signature cannot be
//! re-labelled as another key's.
//!
//! Signatures are detached (`COMPONENT.sig` beside the component) rather
//! than embedded in a custom section: the signed bytes are then exactly the
//! bytes loaded, with no "digest everything except the signature section"
//! rule to get wrong, and the digest that names a component in the registry
//! and the compile cache is the same before and after signing.
//!
//! ```text
//! warden-signature-v1
//! digest: sha256:<64 hex digits>
//! key-id: 3f2a9c0d11e4b7a8
//! signature: <128 hex digits>
//! ```

use sha2::{Digest as _, Sha256};

use crate::{FormatError, PublicKey, SecretKey, text};

const HEADER: &str = "warden-signature-v1";

/// `sha256:<hex>` over the component and its manifest.
pub fn plugin_digest(component: &[u8], manifest: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(b"warden-plugin-v1\0");
    for part in [component, manifest] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// A detached signature of one plugin digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSignature {
    pub digest: String,
    pub key_id: String,
    pub signature: [u8; 64],
}

fn message(digest: &str, key_id: &str) -> Vec<u8> {
    format!("warden-plugin-signature-v1\n{digest}\n{key_id}\n").into_bytes()
}

impl PluginSignature {
    /// Signs `digest` (from [`plugin_digest`]) with `key`.
    pub fn sign(digest: &str, key: &SecretKey) -> PluginSignature {
        let key_id = key.public().key_id().to_string();
        PluginSignature {
            signature: key.sign(&message(digest, &key_id)),
            digest: digest.to_owned(),
            key_id,
        }
    }

    /// Whether the signature verifies under `key` (its digest and key id
    /// are the signed ones; comparing the digest is the caller's job).
    pub(crate) fn verifies(&self, key: &PublicKey) -> bool {
        key.key_id().as_str() == self.key_id
            && key.verify(&message(&self.digest, &self.key_id), &self.signature)
    }

    pub fn to_text(&self) -> String {
        format!(
            "{HEADER}\ndigest: {}\nkey-id: {}\nsignature: {}\n",
            self.digest,
            self.key_id,
            hex::encode(self.signature)
        )
    }

    pub fn from_text(text: &str) -> Result<PluginSignature, FormatError> {
        let f = text::parse(text, HEADER, &["digest", "key-id", "signature"])?;
        let digest_ok = f[0]
            .strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !digest_ok {
            return Err(FormatError::new(
                0,
                "field `digest` must be `sha256:` and 64 hex digits".into(),
            ));
        }
        text::hex_field::<8>("key-id", f[1])?;
        Ok(PluginSignature {
            digest: f[0].to_owned(),
            key_id: f[1].to_owned(),
            signature: text::hex_field::<64>("signature", f[2])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_separates_component_from_manifest() {
        assert_ne!(plugin_digest(b"ab", b"c"), plugin_digest(b"a", b"bc"));
        assert_eq!(plugin_digest(b"ab", b"c"), plugin_digest(b"ab", b"c"));
    }

    #[test]
    fn signature_file_round_trips() -> Result<(), Box<dyn std::error::Error>> {
        let key = SecretKey::generate()?;
        let sig = PluginSignature::sign(&plugin_digest(b"c", b"m"), &key);
        let back = PluginSignature::from_text(&sig.to_text())?;
        assert_eq!(back, sig);
        assert!(back.verifies(&key.public()));
        Ok(())
    }

    #[test]
    fn a_relabelled_signature_does_not_verify() -> Result<(), Box<dyn std::error::Error>> {
        let a = SecretKey::generate()?;
        let b = SecretKey::generate()?;
        let mut sig = PluginSignature::sign(&plugin_digest(b"c", b"m"), &a);
        sig.key_id = b.public().key_id().to_string();
        assert!(!sig.verifies(&b.public()));
        assert!(!sig.verifies(&a.public()));
        Ok(())
    }
}
