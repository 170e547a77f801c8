//! A keyed BLAKE3 MAC for bulk data the host tags and later trusts.
//!
//! Attack: the same as [`crate::HmacSha256`]'s — a compiled plugin in the
//! compile cache replaced by anyone who can write the state directory,
//! so the host would map someone else's native code. Those entries are
//! megabytes read on every start: keyed BLAKE3 (a PRF under a 256-bit
//! key, as strong a MAC as HMAC-SHA256) tags them several times faster
//! than SHA-256 even with the CPU's SHA instructions, which is start-up
//! time a call waits for.

use zeroize::Zeroizing;

/// A MAC computed as its message streams past.
pub struct BulkMac {
    inner: blake3::Hasher,
}

impl BulkMac {
    /// Length of a tag, in bytes.
    pub const TAG_LEN: usize = blake3::OUT_LEN;

    /// A MAC under `key` (derive one per purpose with
    /// [`crate::SecretKey::derive_key`]).
    pub fn new(key: &[u8; 32]) -> BulkMac {
        let key = Zeroizing::new(*key);
        BulkMac {
            inner: blake3::Hasher::new_keyed(&key),
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
    }

    /// The tag of everything passed to [`BulkMac::update`].
    pub fn finalize(&self) -> [u8; 32] {
        *self.inner.finalize().as_bytes()
    }

    /// Whether `tag` is [`BulkMac::finalize`]'s, compared in constant
    /// time.
    pub fn verify(&self, tag: &[u8]) -> bool {
        let Ok(tag) = <[u8; 32]>::try_from(tag) else {
            return false;
        };
        // `blake3::Hash`'s equality is constant-time.
        self.inner.finalize() == blake3::Hash::from_bytes(tag)
    }
}

impl std::fmt::Debug for BulkMac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BulkMac(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_blake3_vector() {
        // The BLAKE3 reference test vectors: key
        // "whats the Elvish word for friend", input of length 0.
        let mac = BulkMac::new(b"whats the Elvish word for friend");
        assert_eq!(
            hex::encode(mac.finalize()),
            "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26"
        );
    }

    #[test]
    fn a_changed_message_key_or_tag_fails() {
        let key = [7u8; 32];
        let mut mac = BulkMac::new(&key);
        mac.update(b"compiled ");
        mac.update(b"bytes");
        let tag = mac.finalize();
        assert!(mac.verify(&tag), "streamed parts verify");

        let mut whole = BulkMac::new(&key);
        whole.update(b"compiled bytes");
        assert!(
            whole.verify(&tag),
            "the tag does not depend on how the input was split"
        );

        let mut changed = BulkMac::new(&key);
        changed.update(b"compiled bytez");
        assert!(!changed.verify(&tag));

        let mut other_key = BulkMac::new(&[8u8; 32]);
        other_key.update(b"compiled bytes");
        assert!(!other_key.verify(&tag));

        let mut bad = tag;
        bad[31] ^= 1;
        assert!(!whole.verify(&bad));
        assert!(!whole.verify(&tag[..31]), "a short tag is refused");
    }
}
