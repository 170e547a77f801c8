//! Digests, keys, signatures and signers (the publisher keys that admit plugins).
//!
//! Owns: every cryptographic primitive Warden uses, so that one crate is
//! reviewed for crypto and the rest only call it — the sha256 digests that
//! name components, ed25519 keys in a small text format, detached plugin
//! signatures, HMAC-SHA256 and keyed BLAKE3 tags and per-purpose keys
//! derived from the host key, and the signers (publisher keys, revoked keys and
//! digests) that decide whether a component may load. The audit chain
//! signs its records with the same [`SecretKey`], and a deployment's audit
//! root endorses each replica's key ([`endorse_audit_key`]).
//!
//! Pure: no file or network I/O and no async; only [`SecretKey::generate`]
//! and [`random_token`] ask the operating system for randomness.

mod bulk_mac;
mod endorse;
mod error;
mod key;
mod mac;
mod plugin;
mod random;
mod signers;
mod text;

pub use bulk_mac::BulkMac;
pub use endorse::{audit_key_endorsed, endorse_audit_key};
pub use error::{FormatError, VerifyError};
pub use key::{KeyId, PublicKey, RandomnessError, SecretKey};
pub use mac::{
    HmacSha256, hmac_sha256, hmac_sha256_parts, verify_hmac_sha256, verify_hmac_sha256_parts,
};
pub use plugin::{PluginSignature, plugin_digest};
pub use random::random_token;
pub use signers::{Publisher, Signers, Verified};

use sha2::{Digest as _, Sha256};

/// `sha256:<64 hex digits>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The raw sha256 of `bytes`, for hash chains.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(
            super::sha256_digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
