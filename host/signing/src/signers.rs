//! Which publishers' signatures admit a component.
//!
//! Attack stopped: running code that nobody the operator trusts vouched
//! for — a component swapped or modified on disk or in transit (one
//! flipped byte in the component or its manifest), a signature copied from
//! another component, a signature by a key the operator never listed or
//! has since revoked, or a specific build known to be bad (a revoked
//! digest, refused even when correctly signed). The check runs on bytes
//! alone, before any of the component's code runs.

use std::collections::BTreeSet;

use crate::{PluginSignature, PublicKey, VerifyError};

/// A trusted publisher: a name operators recognise and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publisher {
    pub name: String,
    pub key: PublicKey,
}

/// Trusted publisher keys and the revocation lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signers {
    publishers: Vec<Publisher>,
    revoked_keys: BTreeSet<String>,
    revoked_digests: BTreeSet<String>,
}

/// Who vouched for a component that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub publisher: String,
    pub key_id: String,
}

impl Signers {
    pub fn new() -> Signers {
        Signers::default()
    }

    /// Trusts `key` under `name`.
    pub fn publisher(mut self, name: &str, key: PublicKey) -> Signers {
        self.publishers.push(Publisher {
            name: name.to_owned(),
            key,
        });
        self
    }

    /// Refuses every signature by the key with this id.
    pub fn revoke_key(mut self, key_id: &str) -> Signers {
        self.revoked_keys.insert(key_id.to_ascii_lowercase());
        self
    }

    /// Refuses the component with this digest, however it is signed.
    pub fn revoke_digest(mut self, digest: &str) -> Signers {
        self.revoked_digests.insert(digest.to_ascii_lowercase());
        self
    }

    pub fn publishers(&self) -> &[Publisher] {
        &self.publishers
    }

    /// Whether the component whose actual digest is `digest` may load,
    /// given its detached signature (if any). Checks, in order: revoked
    /// digest, presence of a signature, digest match, known key, revoked
    /// key, signature.
    pub fn verify(
        &self,
        digest: &str,
        signature: Option<&PluginSignature>,
    ) -> Result<Verified, VerifyError> {
        if self.is_revoked_digest(digest) {
            return Err(VerifyError::RevokedDigest {
                digest: digest.to_owned(),
            });
        }
        let Some(signature) = signature else {
            return Err(VerifyError::Unsigned);
        };
        if signature.digest != digest {
            return Err(VerifyError::DigestMismatch {
                signed: signature.digest.clone(),
                actual: digest.to_owned(),
            });
        }
        let publisher = self
            .publishers
            .iter()
            .find(|p| p.key.key_id().as_str() == signature.key_id);
        let name = publisher.map_or_else(|| "unknown".to_owned(), |p| p.name.clone());
        if self.revoked_keys.contains(&signature.key_id) {
            return Err(VerifyError::RevokedKey {
                key_id: signature.key_id.clone(),
                publisher: name,
            });
        }
        let Some(publisher) = publisher else {
            return Err(VerifyError::UnknownKey {
                key_id: signature.key_id.clone(),
            });
        };
        if !signature.verifies(&publisher.key) {
            return Err(VerifyError::BadSignature {
                key_id: signature.key_id.clone(),
                publisher: name,
            });
        }
        Ok(Verified {
            publisher: name,
            key_id: signature.key_id.clone(),
        })
    }

    /// Whether `digest` is on the revocation list (checked even for
    /// components admitted unsigned).
    pub fn is_revoked_digest(&self, digest: &str) -> bool {
        self.revoked_digests.contains(&digest.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SecretKey, plugin_digest};

    type R = Result<(), Box<dyn std::error::Error>>;

    fn setup() -> Result<(SecretKey, Signers, String), Box<dyn std::error::Error>> {
        let key = SecretKey::generate()?;
        let roots = Signers::new().publisher("acme", key.public());
        Ok((key, roots, plugin_digest(b"component", b"manifest")))
    }

    fn check(roots: &Signers, digest: &str, sig: Option<&PluginSignature>) -> &'static str {
        match roots.verify(digest, sig) {
            Ok(_) => "ok",
            Err(e) => e.check(),
        }
    }

    #[test]
    fn admits_a_trusted_signature_and_names_the_publisher() -> R {
        let (key, roots, digest) = setup()?;
        let sig = PluginSignature::sign(&digest, &key);
        let v = roots.verify(&digest, Some(&sig))?;
        assert_eq!(v.publisher, "acme");
        assert_eq!(v.key_id, key.public().key_id().to_string());
        Ok(())
    }

    #[test]
    fn refuses_each_failed_check_by_name() -> R {
        let (key, roots, digest) = setup()?;
        let sig = PluginSignature::sign(&digest, &key);
        let other = plugin_digest(b"componenT", b"manifest");
        assert_eq!(check(&roots, &other, Some(&sig)), "tampered");
        assert_eq!(check(&roots, &digest, None), "unsigned");
        let mut flipped = sig.clone();
        flipped.signature[0] ^= 0x80;
        assert_eq!(check(&roots, &digest, Some(&flipped)), "bad_signature");
        let stranger = PluginSignature::sign(&digest, &SecretKey::generate()?);
        assert_eq!(check(&roots, &digest, Some(&stranger)), "unknown_key");
        let revoked = roots.clone().revoke_key(&sig.key_id);
        assert_eq!(check(&revoked, &digest, Some(&sig)), "revoked_key");
        let bad_build = roots.clone().revoke_digest(&digest);
        assert_eq!(check(&bad_build, &digest, Some(&sig)), "revoked_digest");
        assert_eq!(check(&bad_build, &digest, None), "revoked_digest");
        Ok(())
    }
}
