//! HMAC-SHA256 (RFC 2104) and keys derived from the host key.
//!
//! Attack: a file the host writes and later trusts on reading it back —
//! compiled native code in the compile cache — replaced or edited by
//! anyone who can write the state directory (a tool granted it, another
//! local user, a restored backup). Tagging each file with a MAC under a
//! key only the host holds lets the host tell its own bytes from anyone
//! else's before it acts on them. Keys for such purposes are derived from
//! the host's signing key, one per purpose, so a tag made for one use is
//! never accepted for another.

use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::SecretKey;

const BLOCK: usize = 64;

/// The HMAC-SHA256 tag of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    hmac_sha256_parts(key, &[message])
}

/// The HMAC-SHA256 tag of the concatenation of `parts` under `key`,
/// without copying them into one buffer (a compile cache entry is
/// megabytes).
pub fn hmac_sha256_parts(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacSha256::new(key);
    for part in parts {
        mac.update(part);
    }
    mac.finalize()
}

/// Whether `tag` is the HMAC-SHA256 of `message` under `key`, compared in
/// constant time.
pub fn verify_hmac_sha256(key: &[u8], message: &[u8], tag: &[u8]) -> bool {
    verify_hmac_sha256_parts(key, &[message], tag)
}

/// [`verify_hmac_sha256`] of the concatenation of `parts`.
pub fn verify_hmac_sha256_parts(key: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
    let mut mac = HmacSha256::new(key);
    for part in parts {
        mac.update(part);
    }
    mac.verify(tag)
}

/// An HMAC-SHA256 computed as its message streams past (a file copied
/// through a small buffer is tagged without being held whole).
pub struct HmacSha256 {
    inner: Sha256,
    block: Zeroizing<[u8; BLOCK]>,
}

impl HmacSha256 {
    pub fn new(key: &[u8]) -> HmacSha256 {
        let mut block = Zeroizing::new([0u8; BLOCK]);
        if key.len() > BLOCK {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let mut inner = Sha256::new();
        inner.update(block.map(|b| b ^ 0x36));
        HmacSha256 { inner, block }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
    }

    /// The tag of everything passed to [`HmacSha256::update`].
    pub fn finalize(self) -> [u8; 32] {
        let inner = self.inner.finalize();
        let mut outer = Sha256::new();
        outer.update(self.block.map(|b| b ^ 0x5c));
        outer.update(inner);
        outer.finalize().into()
    }

    /// Whether `tag` is [`HmacSha256::finalize`]'s, compared in constant
    /// time.
    pub fn verify(self, tag: &[u8]) -> bool {
        let expected = self.finalize();
        if tag.len() != expected.len() {
            return false;
        }
        expected
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Debug for HmacSha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HmacSha256(..)")
    }
}

impl SecretKey {
    /// A 32-byte key for `purpose` (e.g. `"compile-cache"`), derived from
    /// this key's secret: the same for the same key and purpose, unrelated
    /// across purposes, and revealing nothing of the signing key.
    pub fn derive_key(&self, purpose: &str) -> [u8; 32] {
        let seed = Zeroizing::new(self.seed());
        let mut label = b"warden-derived-key-v1\0".to_vec();
        label.extend_from_slice(purpose.as_bytes());
        hmac_sha256(&*seed, &label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_vectors() {
        // Test case 1.
        assert_eq!(
            hex::encode(hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2.
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn verify_refuses_any_other_tag() {
        let tag = hmac_sha256(b"k", b"m");
        assert!(verify_hmac_sha256(b"k", b"m", &tag));
        let mut flipped = tag;
        flipped[31] ^= 1;
        assert!(!verify_hmac_sha256(b"k", b"m", &flipped));
        assert!(!verify_hmac_sha256(b"k", b"m2", &tag));
        assert!(!verify_hmac_sha256(b"k2", b"m", &tag));
        assert!(!verify_hmac_sha256(b"k", b"m", &tag[..31]));
    }

    #[test]
    fn a_tag_over_parts_is_the_tag_over_their_concatenation() {
        let whole = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let parts: [&[u8]; 4] = [b"what do", b"", b" ya want", b" for nothing?"];
        assert_eq!(hmac_sha256_parts(b"Jefe", &parts), whole);
        assert!(verify_hmac_sha256_parts(b"Jefe", &parts, &whole));
        assert!(!verify_hmac_sha256_parts(b"Jefe", &parts[1..], &whole));
        let mut streamed = HmacSha256::new(b"Jefe");
        for part in parts {
            streamed.update(part);
        }
        assert!(streamed.verify(&whole));
    }

    #[test]
    fn derived_keys_differ_by_purpose_and_key() {
        let a = SecretKey::generate().unwrap();
        let b = SecretKey::generate().unwrap();
        assert_eq!(a.derive_key("x"), a.derive_key("x"));
        assert_ne!(a.derive_key("x"), a.derive_key("y"));
        assert_ne!(a.derive_key("x"), b.derive_key("x"));
    }
}
