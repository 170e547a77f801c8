//! The issuer's signing keys: a JWK set read once (a file) or fetched and
//! cached (a URL), refreshed when a token names a key the cache lacks.
//!
//! Attacks it stops: algorithm confusion — each key verifies only with the
//! algorithms of its own family that the operator allows (and the one its
//! JWK names, if any), HMAC keys are dropped, and `alg: none` has no key;
//! hammering the issuer (or this host) with tokens naming made-up key ids —
//! a refresh for an unknown key happens at most once per
//! [`MIN_REFRESH`], and one refresh at a time.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use warden_api::BoxFuture;

use super::config::JwtAlgorithm;

/// The soonest a key set is fetched again because of an unknown key.
pub const MIN_REFRESH: Duration = Duration::from_secs(10);
/// A fetched key set is fetched again after this long (keys rotate).
pub const MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// The largest key set accepted, in bytes.
pub const MAX_JWKS_BYTES: usize = 256 << 10;

/// Fetches the key set's JSON.
pub type Fetch = Arc<dyn Fn() -> BoxFuture<'static, Result<Vec<u8>, String>> + Send + Sync>;

/// One usable key: the decoding key and a validation prepared for it.
pub struct Key {
    pub decoding: DecodingKey,
    pub validation: Validation,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("algorithms", &self.validation.algorithms)
            .finish_non_exhaustive()
    }
}

/// A key set, by key id.
#[derive(Debug, Default)]
pub struct Keys {
    by_kid: HashMap<String, Arc<Key>>,
    /// Keys without an id (tried for tokens that name none).
    unnamed: Vec<Arc<Key>>,
}

fn algorithm(a: JwtAlgorithm) -> Algorithm {
    match a {
        JwtAlgorithm::RS256 => Algorithm::RS256,
        JwtAlgorithm::RS384 => Algorithm::RS384,
        JwtAlgorithm::RS512 => Algorithm::RS512,
        JwtAlgorithm::PS256 => Algorithm::PS256,
        JwtAlgorithm::PS384 => Algorithm::PS384,
        JwtAlgorithm::PS512 => Algorithm::PS512,
        JwtAlgorithm::ES256 => Algorithm::ES256,
        JwtAlgorithm::ES384 => Algorithm::ES384,
        JwtAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

impl Keys {
    /// The usable keys of a JWK set; `base` is the validation every key
    /// starts from (issuer, audience, leeway), `allowed` the operator's
    /// algorithms. Keys that cannot be used are skipped with a log line.
    pub fn parse(json: &[u8], base: &Validation, allowed: &[JwtAlgorithm]) -> Result<Keys, String> {
        let set: JwkSet =
            serde_json::from_slice(json).map_err(|e| format!("not a JWK set: {e}"))?;
        let mut keys = Keys::default();
        for jwk in &set.keys {
            match key(jwk, base, allowed) {
                Ok(k) => match &jwk.common.key_id {
                    Some(kid) => {
                        keys.by_kid.insert(kid.clone(), Arc::new(k));
                    }
                    None => keys.unnamed.push(Arc::new(k)),
                },
                Err(why) => {
                    tracing::info!(kid = ?jwk.common.key_id, why, "a key of the JWK set is not used")
                }
            }
        }
        Ok(keys)
    }

    /// The keys a token's header points at.
    pub fn find(&self, kid: Option<&str>) -> Vec<Arc<Key>> {
        match kid {
            Some(kid) => self.by_kid.get(kid).cloned().into_iter().collect(),
            None => self.unnamed.clone(),
        }
    }

    pub fn len(&self) -> usize {
        self.by_kid.len() + self.unnamed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn key(jwk: &Jwk, base: &Validation, allowed: &[JwtAlgorithm]) -> Result<Key, String> {
    if jwk.common.public_key_use == Some(jsonwebtoken::jwk::PublicKeyUse::Encryption) {
        return Err("an encryption key (`use: enc`)".to_owned());
    }
    let decoding = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    let family = decoding.family();
    if family == jsonwebtoken::AlgorithmFamily::Hmac {
        return Err("a symmetric key".to_owned());
    }
    let named: Option<Algorithm> = jwk
        .common
        .key_algorithm
        .and_then(|a| format!("{a:?}").parse().ok());
    let algorithms: Vec<Algorithm> = allowed
        .iter()
        .map(|a| algorithm(*a))
        .filter(|a| a.family() == family && named.is_none_or(|n| n == *a))
        .collect();
    if algorithms.is_empty() {
        return Err("none of the allowed algorithms fits the key".to_owned());
    }
    let mut validation = base.clone();
    validation.algorithms = algorithms;
    Ok(Key {
        decoding,
        validation,
    })
}

/// The key set in use, and how to refresh it.
pub struct KeyCache {
    keys: RwLock<(Arc<Keys>, Option<Instant>)>,
    fetch: Option<Fetch>,
    base: Validation,
    allowed: Vec<JwtAlgorithm>,
    refreshing: tokio::sync::Mutex<()>,
    /// Counts key set changes (what a verified token was checked against).
    generation: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("keys", &self.current().len())
            .field("fetched", &self.fetch.is_some())
            .finish_non_exhaustive()
    }
}

impl KeyCache {
    /// Keys that never change (a file).
    pub fn fixed(keys: Keys, base: Validation, allowed: Vec<JwtAlgorithm>) -> KeyCache {
        KeyCache {
            keys: RwLock::new((Arc::new(keys), None)),
            fetch: None,
            base,
            allowed,
            refreshing: tokio::sync::Mutex::new(()),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Keys fetched by `fetch`, first on [`KeyCache::refresh`] or use.
    pub fn fetched(fetch: Fetch, base: Validation, allowed: Vec<JwtAlgorithm>) -> KeyCache {
        KeyCache {
            keys: RwLock::new((Arc::new(Keys::default()), None)),
            fetch: Some(fetch),
            base,
            allowed,
            refreshing: tokio::sync::Mutex::new(()),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Changes whenever a fetched key set replaces the cached one.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn current(&self) -> Arc<Keys> {
        match self.keys.read() {
            Ok(guard) => guard.0.clone(),
            Err(poisoned) => poisoned.into_inner().0.clone(),
        }
    }

    fn fetched_at(&self) -> Option<Instant> {
        match self.keys.read() {
            Ok(guard) => guard.1,
            Err(poisoned) => poisoned.into_inner().1,
        }
    }

    /// Fetches the key set now, if it is fetched at all and was not
    /// fetched in the last `min` (another caller's refresh counts).
    pub async fn refresh(&self, min: Duration) -> Result<(), String> {
        let Some(fetch) = &self.fetch else {
            return Ok(());
        };
        let _one = self.refreshing.lock().await;
        if self.fetched_at().is_some_and(|at| at.elapsed() < min) {
            return Ok(());
        }
        let body = fetch().await;
        let now = Instant::now();
        let parsed = body.and_then(|b| Keys::parse(&b, &self.base, &self.allowed));
        let mut guard = match self.keys.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        match parsed {
            Ok(keys) => {
                *guard = (Arc::new(keys), Some(now));
                self.generation
                    .fetch_add(1, std::sync::atomic::Ordering::Release);
                Ok(())
            }
            Err(e) => {
                // Keep the keys we had; try again no sooner than `min`.
                guard.1 = Some(now);
                Err(e)
            }
        }
    }

    /// The keys for a token's `kid`: from the cache, else after a refresh
    /// (rate-limited). A stale set is refreshed first.
    pub async fn find(&self, kid: Option<&str>) -> Vec<Arc<Key>> {
        if self.fetch.is_some()
            && self.fetched_at().is_none_or(|at| at.elapsed() >= MAX_AGE)
            && let Err(e) = self.refresh(Duration::ZERO).await
        {
            tracing::warn!(error = %e, "the issuer's key set could not be fetched");
        }
        let found = self.current().find(kid);
        if !found.is_empty() || self.fetch.is_none() {
            return found;
        }
        if let Err(e) = self.refresh(MIN_REFRESH).await {
            tracing::warn!(error = %e, "the issuer's key set could not be fetched");
        }
        self.current().find(kid)
    }
}
