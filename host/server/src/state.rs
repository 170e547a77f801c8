//! The state directory: the database opened with the host key beside it,
//! and the keys derived from the host key, one per purpose.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warden_signing::SecretKey;
use warden_store::{PgStore, SqliteStore, Store, existing_key, host_key, private_dir};

use crate::ServerError;
use crate::config::StateConfig;

fn private(state_dir: &Path) -> Result<(), ServerError> {
    Ok(private_dir(state_dir)?)
}

/// The database file in the state directory.
pub const DB_FILE: &str = "warden.db";
/// The host's signing key in the state directory.
pub const KEY_FILE: &str = "host.key";

/// Opens the state database (creating the directory, key and database
/// when missing): `warden.db` in `state_dir`, or the PostgreSQL database
/// at `[state] url`, with the host key in `state_dir` either way. A newer
/// or damaged database is an error.
pub fn open(state_dir: &Path, state: &StateConfig) -> Result<Arc<dyn Store>, ServerError> {
    private(state_dir)?;
    let key = host_key(&state_dir.join(KEY_FILE))?;
    if let Some(url) = &state.url {
        let public = key.public();
        let store = PgStore::open(url, key)?.with_audit_args(state.audit_args);
        if let Some(root) = audit_root(state)? {
            store.endorse(&warden_signing::endorse_audit_key(&root, &public))?;
        }
        return Ok(Arc::new(store));
    }
    let durability = match state.durability {
        crate::config::Durability::Full => warden_store::Durability::Full,
        crate::config::Durability::Normal => warden_store::Durability::Normal,
    };
    let store = SqliteStore::open(&state_dir.join(DB_FILE), key)?
        .with_durability(durability)?
        .with_audit_args(state.audit_args);
    Ok(Arc::new(store))
}

/// The deployment's audit root (`[state] audit-root-key`), when set.
pub fn audit_root(state: &StateConfig) -> Result<Option<SecretKey>, ServerError> {
    Ok(match &state.audit_root_key {
        Some(path) => Some(existing_key(path)?),
        None => None,
    })
}

/// The host key (created when missing, in an owner-only state
/// directory), for verifying the audit chain and deriving keys.
pub fn key(state_dir: &Path) -> Result<SecretKey, ServerError> {
    private(state_dir)?;
    Ok(host_key(&state_dir.join(KEY_FILE))?)
}

/// Makes the host key in `state_dir` when there is none yet. Work that
/// reads the key from more than one thread calls this first: two
/// threads finding no key would each make one, and one of them fail.
pub fn ensure_key(state_dir: &Path) -> Result<(), ServerError> {
    if state_dir.join(KEY_FILE).is_file() {
        return Ok(());
    }
    key(state_dir).map(drop)
}

/// What the compile cache's key is derived for.
pub const CACHE_KEY_PURPOSE: &str = "compile-cache";

/// The key that authenticates the compile cache in `state_dir`, derived
/// from the host key there.
pub fn cache_key(state_dir: &Path) -> Result<warden_runtime::CacheKey, ServerError> {
    Ok(warden_runtime::CacheKey::new(
        key(state_dir)?.derive_key(CACHE_KEY_PURPOSE),
    ))
}

/// What the admission memo's key is derived for.
pub const MEMO_KEY_PURPOSE: &str = "admission-memo";

/// The admission memo of `state_dir` (`plugins/admitted.json`), keyed by
/// a key derived from the host key there.
pub fn admission_memo(state_dir: &Path) -> Result<warden_registry::AdmissionMemo, ServerError> {
    Ok(warden_registry::AdmissionMemo::open(
        state_dir.join("plugins").join("admitted.json"),
        key(state_dir)?.derive_key(MEMO_KEY_PURPOSE),
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

/// The key that approval bindings and sealed request states derive from:
/// the deployment's shared key (`[state] shared-key`) when replicas share
/// one, else the host key.
pub fn binding_key(state_dir: &Path, state: &StateConfig) -> Result<SecretKey, ServerError> {
    match &state.shared_key {
        Some(path) => Ok(host_key(path)?),
        None => key(state_dir),
    }
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
pub fn sandbox_instance(state_dir: &Path) -> Result<String, ServerError> {
    Ok(derived_name(&key(state_dir)?, "sandbox-instance"))
}

/// The deployment whose agents' persistent sandbox workspaces a host
/// uses: from the key replicas share (`[state] shared-key`), else the
/// host's own.
pub fn sandbox_deployment(state_dir: &Path, state: &StateConfig) -> Result<String, ServerError> {
    Ok(derived_name(
        &binding_key(state_dir, state)?,
        "sandbox-deployment",
    ))
}

/// 16 hex digits derived from `key` for `purpose`: a stable name that
/// tells nothing of the key.
fn derived_name(key: &SecretKey, purpose: &str) -> String {
    let digest = warden_signing::sha256(&key.derive_key(purpose));
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
