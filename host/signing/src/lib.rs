//! Content digests of plugin components.
//!
//! Owns: every cryptographic primitive Warden uses, so that one crate is
//! reviewed for crypto and the rest only call it. Today that is the
//! sha256 digest that names a component in the compile cache and in
//! `warden plugin inspect`; publisher signatures and trust roots come next.
//!
//! Pure: no I/O, no async.

use sha2::{Digest as _, Sha256};

/// `sha256:<64 hex digits>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
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
