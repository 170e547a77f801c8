//! The state database as `warden` uses it: opened from the state
//! directory with the host key beside it, and the glue that feeds the
//! gate its grants from the store.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use warden_gate::GrantSource;
use warden_policy::GrantSet;
use warden_signing::SecretKey;
use warden_store::{Store, host_key, now_ms, private_dir};

/// The database file in the state directory.
pub const DB_FILE: &str = "warden.db";
/// The host's signing key in the state directory.
pub const KEY_FILE: &str = "host.key";

/// Opens the state database (creating the directory, key and database
/// when missing). A newer or damaged database is an error.
pub fn open(state_dir: &Path, audit_args: bool) -> anyhow::Result<Arc<Store>> {
    open_with(state_dir, audit_args, crate::config::Durability::Full)
}

/// [`open`], committing with `durability`.
pub fn open_with(
    state_dir: &Path,
    audit_args: bool,
    durability: crate::config::Durability,
) -> anyhow::Result<Arc<Store>> {
    private_dir(state_dir)
        .with_context(|| format!("creating the state directory {}", state_dir.display()))?;
    let key = host_key(&state_dir.join(KEY_FILE))?;
    let durability = match durability {
        crate::config::Durability::Full => warden_store::Durability::Full,
        crate::config::Durability::Normal => warden_store::Durability::Normal,
    };
    let store = Store::open(&state_dir.join(DB_FILE), key)?
        .with_durability(durability)?
        .with_audit_args(audit_args);
    Ok(Arc::new(store))
}

/// The host key (created when missing, in an owner-only state
/// directory), for verifying the audit chain and deriving keys.
pub fn key(state_dir: &Path) -> anyhow::Result<SecretKey> {
    private_dir(state_dir)
        .with_context(|| format!("creating the state directory {}", state_dir.display()))?;
    Ok(host_key(&state_dir.join(KEY_FILE))?)
}

/// What the compile cache's key is derived for.
pub const CACHE_KEY_PURPOSE: &str = "compile-cache";

/// The key that authenticates the compile cache in `state_dir`, derived
/// from the host key there.
pub fn cache_key(state_dir: &Path) -> anyhow::Result<warden_runtime::CacheKey> {
    Ok(warden_runtime::CacheKey::new(
        key(state_dir)?.derive_key(CACHE_KEY_PURPOSE),
    ))
}

/// The per-user state directory: `$XDG_STATE_HOME/warden`, else
/// `$HOME/.local/state/warden`; `None` when neither is set (absolute).
pub fn user_state_dir() -> Option<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_STATE_HOME")
        .map(|d| d.join("warden"))
        .or_else(|| absolute("HOME").map(|h| h.join(".local/state/warden")))
}

/// Keys argument fingerprints with a secret derived from the host key,
/// so an approval's binding to its arguments survives a restart.
pub fn fingerprint_key(key: &SecretKey) -> [u8; 32] {
    let mut material = b"warden-args-fingerprint\0".to_vec();
    material.extend_from_slice(key.to_text().as_bytes());
    warden_signing::sha256(&material)
}

/// Keys the sealed request states of asks sent to 2026-07-28 clients,
/// with a secret derived from the host key (so a state stays valid across
/// a restart, and only this host can make one).
pub fn request_state_key(key: &SecretKey) -> Vec<u8> {
    key.derive_key("request-state").to_vec()
}

/// The sandbox instance of the Warden whose state is in `state_dir`: a
/// stable name derived from the host key, so a restarted host recognises
/// (and reconciles) the containers it left, and no other installation's.
pub fn sandbox_instance(state_dir: &Path) -> anyhow::Result<String> {
    let digest = warden_signing::sha256(&key(state_dir)?.derive_key("sandbox-instance"));
    Ok(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// What `Store::grants_version` returns.
type GrantsVersion = (i64, u64);

/// Grants from the store, reloaded when the database changed (a grant
/// issued or revoked by this process or by `warden grants`).
pub struct StoreGrants {
    store: Arc<Store>,
    cache: Mutex<(Option<GrantsVersion>, Arc<GrantSet>)>,
}

impl StoreGrants {
    pub fn new(store: Arc<Store>) -> StoreGrants {
        StoreGrants {
            store,
            cache: Mutex::new((None, Arc::new(GrantSet::default()))),
        }
    }
}

impl GrantSource for StoreGrants {
    fn current(&self) -> Arc<GrantSet> {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let version = self.store.grants_version().ok();
        if version.is_none() || version != cache.0 {
            match self.store.live_grants(now_ms()) {
                Ok(grants) => *cache = (version, Arc::new(GrantSet::new(grants))),
                Err(e) => {
                    // Fail closed: no grants rather than stale ones.
                    tracing::error!(error = %e, "reading grants failed");
                    *cache = (None, Arc::new(GrantSet::default()));
                }
            }
        }
        cache.1.clone()
    }
}
