//! Ed25519 keys and their text files.
//!
//! A secret key file holds the 32-byte seed; a public key file holds the
//! 32-byte verifying key. Both carry the key id (the first 8 bytes of the
//! sha256 of the public key, in hex), which parsing checks against the key,
//! so a file whose key was edited or swapped is refused, not misattributed.
//!
//! ```text
//! # Warden secret key: keep this file private (mode 0600).
//! warden-secret-key-v1
//! key-id: 3f2a9c0d11e4b7a8
//! seed: <64 hex digits>
//! ```
//!
//! ```text
//! warden-public-key-v1
//! key-id: 3f2a9c0d11e4b7a8
//! key: <64 hex digits>
//! ```

use std::fmt;

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::{FormatError, text};

const SECRET_HEADER: &str = "warden-secret-key-v1";
const PUBLIC_HEADER: &str = "warden-public-key-v1";

/// A key's short id: 16 hex digits of the sha256 of the public key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId(String);

impl KeyId {
    fn of(key: &VerifyingKey) -> KeyId {
        KeyId(hex::encode(&Sha256::digest(key.as_bytes())[..8]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A private signing key. Its bytes are wiped when dropped and never
/// printed by `Debug`.
pub struct SecretKey {
    key: SigningKey,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("key_id", &self.public().key_id())
            .finish_non_exhaustive()
    }
}

/// The operating system could not supply randomness for a new key.
#[derive(Debug, thiserror::Error)]
#[error("no randomness from the operating system: {0}")]
pub struct RandomnessError(String);

impl RandomnessError {
    pub(crate) fn new(reason: String) -> RandomnessError {
        RandomnessError(reason)
    }
}

impl SecretKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<SecretKey, RandomnessError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut *seed).map_err(|e| RandomnessError(e.to_string()))?;
        Ok(SecretKey {
            key: SigningKey::from_bytes(&seed),
        })
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.key.verifying_key(),
        }
    }

    /// The 64-byte ed25519 signature of `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// The 32-byte seed, for deriving purpose keys (`mac.rs`).
    pub(crate) fn seed(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The secret key file's text. Holds the seed: write it owner-only.
    pub fn to_text(&self) -> Zeroizing<String> {
        Zeroizing::new(format!(
            "# Warden secret key: keep this file private (mode 0600).\n\
             {SECRET_HEADER}\nkey-id: {}\nseed: {}\n",
            self.public().key_id(),
            hex::encode(self.key.to_bytes())
        ))
    }

    pub fn from_text(text: &str) -> Result<SecretKey, FormatError> {
        let fields = text::parse(text, SECRET_HEADER, &["key-id", "seed"])?;
        let seed = Zeroizing::new(text::hex_field::<32>("seed", fields[1])?);
        let key = SecretKey {
            key: SigningKey::from_bytes(&seed),
        };
        check_id(fields[0], &key.public())?;
        Ok(key)
    }
}

/// A public verifying key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
}

impl PublicKey {
    pub fn key_id(&self) -> KeyId {
        KeyId::of(&self.key)
    }

    /// Whether `signature` is this key's signature of `message` (strict
    /// verification: no malleable or small-order forms).
    pub fn verify(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let signature = ed25519_dalek::Signature::from_bytes(signature);
        self.key.verify_strict(message, &signature).is_ok()
    }

    pub fn to_text(&self) -> String {
        format!(
            "{PUBLIC_HEADER}\nkey-id: {}\nkey: {}\n",
            self.key_id(),
            hex::encode(self.key.as_bytes())
        )
    }

    pub fn from_text(text: &str) -> Result<PublicKey, FormatError> {
        let fields = text::parse(text, PUBLIC_HEADER, &["key-id", "key"])?;
        let bytes = text::hex_field::<32>("key", fields[1])?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|_| FormatError::new(0, "field `key` is not a valid ed25519 key".into()))?;
        let key = PublicKey { key };
        check_id(fields[0], &key)?;
        Ok(key)
    }
}

fn check_id(written: &str, key: &PublicKey) -> Result<(), FormatError> {
    let actual = key.key_id();
    if written == actual.as_str() {
        Ok(())
    } else {
        Err(FormatError::new(
            0,
            format!("key-id `{written}` does not match the key (its id is {actual})"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_sign() -> Result<(), Box<dyn std::error::Error>> {
        let secret = SecretKey::generate()?;
        let again = SecretKey::from_text(&secret.to_text())?;
        let public = PublicKey::from_text(&again.public().to_text())?;
        assert_eq!(public, secret.public());
        let sig = again.sign(b"hello");
        assert!(public.verify(b"hello", &sig));
        assert!(!public.verify(b"hellp", &sig));
        let mut bad = sig;
        bad[10] ^= 1;
        assert!(!public.verify(b"hello", &bad));
        Ok(())
    }

    #[test]
    fn an_edited_key_is_refused_by_its_id() -> Result<(), Box<dyn std::error::Error>> {
        let a = SecretKey::generate()?.public().to_text();
        let b = SecretKey::generate()?.public();
        let swapped = a
            .lines()
            .map(|l| {
                if l.starts_with("key:") {
                    format!("key: {}", hex::encode(b.key.as_bytes()))
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let err = PublicKey::from_text(&swapped).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("does not match")));
        Ok(())
    }

    #[test]
    fn debug_never_shows_the_seed() -> Result<(), Box<dyn std::error::Error>> {
        let key = SecretKey::generate()?;
        let seed = hex::encode(key.key.to_bytes());
        assert!(!format!("{key:?}").contains(&seed));
        Ok(())
    }
}
