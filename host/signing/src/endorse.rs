//! A deployment's audit root endorsing each replica's host key.
//!
//! Attack: someone with write access to the shared database (but not to
//! the replicas' keys) registering an audit chain of their own — a key
//! they made, records they wrote and signed with it — so that `audit
//! verify` walks a forged chain that verifies, or replacing a chain's
//! registration and records wholesale. Each replica's host key is signed
//! by the deployment's audit root key, which the database never holds; a
//! chain whose key carries no valid endorsement is not the deployment's.
//!
//! The endorsement signs the endorsed key's id and public key under a
//! domain tag, so it can neither be moved to another key nor be mistaken
//! for a plugin signature or an audit record.

use crate::{PublicKey, SecretKey};

const TAG: &str = "warden-audit-endorsement-v1";

fn message(key: &PublicKey) -> Vec<u8> {
    format!("{TAG}\n{}\n{}\n", key.key_id(), key.to_text().trim()).into_bytes()
}

/// `root`'s endorsement of `key` as an audit chain's key, as text
/// (`ed25519:<128 hex digits>`).
pub fn endorse_audit_key(root: &SecretKey, key: &PublicKey) -> String {
    format!("ed25519:{}", hex::encode(root.sign(&message(key))))
}

/// Whether `endorsement` is `root`'s endorsement of `key`.
pub fn audit_key_endorsed(root: &PublicKey, key: &PublicKey, endorsement: &str) -> bool {
    let Some(hex_text) = endorsement.trim().strip_prefix("ed25519:") else {
        return false;
    };
    let mut signature = [0u8; 64];
    if hex::decode_to_slice(hex_text, &mut signature).is_err() {
        return false;
    }
    root.verify(&message(key), &signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SecretKey {
        SecretKey::generate().unwrap()
    }

    #[test]
    fn an_endorsement_holds_for_its_key_under_its_root_only() {
        let (root, replica, other) = (key(), key(), key());
        let text = endorse_audit_key(&root, &replica.public());
        assert!(audit_key_endorsed(&root.public(), &replica.public(), &text));
        // Moved to another key, or checked against another root.
        assert!(!audit_key_endorsed(&root.public(), &other.public(), &text));
        assert!(!audit_key_endorsed(
            &other.public(),
            &replica.public(),
            &text
        ));
        // A replica endorsing itself is not the root endorsing it.
        let own = endorse_audit_key(&replica, &replica.public());
        assert!(!audit_key_endorsed(&root.public(), &replica.public(), &own));
    }

    #[test]
    fn a_malformed_endorsement_is_no_endorsement() {
        let (root, replica) = (key(), key());
        let text = endorse_audit_key(&root, &replica.public());
        let flipped = format!("{}0", &text[..text.len() - 1]);
        for bad in [
            "",
            "ed25519:",
            "ed25519:zz",
            &text[8..],
            &text[..text.len() - 2],
            flipped.as_str(),
        ] {
            if bad == text {
                continue;
            }
            assert!(
                !audit_key_endorsed(&root.public(), &replica.public(), bad),
                "{bad:?}"
            );
        }
    }
}
