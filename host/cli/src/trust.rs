//! The loading policy from configuration: trusted publisher keys read from
//! their files, the revocation lists, and the insecure flag.

use anyhow::Context;
use warden_registry::LoadPolicy;
use warden_signing::{PublicKey, TrustRoots};

use crate::config::TrustConfig;

/// The policy `trust` describes; a key file that cannot be read or parsed
/// stops with its path and line.
pub fn policy(trust: &TrustConfig) -> anyhow::Result<LoadPolicy> {
    let mut roots = TrustRoots::new();
    for (i, p) in trust.publishers.iter().enumerate() {
        let text = std::fs::read_to_string(&p.key).with_context(|| {
            format!(
                "trust.publishers[{i}] (`{}`): reading the key {}",
                p.name,
                p.key.display()
            )
        })?;
        let key = PublicKey::from_text(&text).with_context(|| {
            format!(
                "trust.publishers[{i}] (`{}`): {} is not a warden public key",
                p.name,
                p.key.display()
            )
        })?;
        roots = roots.publisher(&p.name, key);
    }
    for (i, id) in trust.revoked_keys.iter().enumerate() {
        let ok = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
        if !ok {
            anyhow::bail!("trust.revoked-keys[{i}]: `{id}` is not a key id (16 hex digits)");
        }
        roots = roots.revoke_key(id);
    }
    for (i, d) in trust.revoked_digests.iter().enumerate() {
        let ok = d
            .strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ok {
            anyhow::bail!("trust.revoked-digests[{i}]: `{d}` is not `sha256:` and 64 hex digits");
        }
        roots = roots.revoke_digest(d);
    }
    if trust.insecure_allow_unsigned {
        tracing::warn!(
            "INSECURE: `insecure-allow-unsigned` is set; plugins without a signature will load"
        );
    }
    Ok(LoadPolicy {
        roots,
        insecure_allow_unsigned: trust.insecure_allow_unsigned,
    })
}
