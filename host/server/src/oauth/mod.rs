//! The HTTP listener as an OAuth 2.1 resource server: `[serve.oauth]`,
//! the issuer's keys and the validation of access tokens. The listener's
//! side (metadata, challenges) is `warden_mcp`'s `ResourceServer`; this
//! module gives it the verifier, which is the only place JWTs are read.

pub mod config;
pub mod keys;
mod seen;
pub mod verify;

use std::sync::Arc;

pub use config::{ClaimRule, JwtAlgorithm, KeySource, OAuthConfig, OperatorRule};
pub use keys::{Fetch, KeyCache, Keys};
pub use verify::{JwtVerifier, base_validation};
use warden_mcp::ResourceServer;

use crate::ServerError;

/// The verifier of `config`'s tokens, its keys read (a file) or ready to
/// be fetched (a URL); `agents` are the configured agent names.
pub fn verifier(config: &OAuthConfig, agents: &[&str]) -> Result<JwtVerifier, ServerError> {
    let source = config.check(agents)?;
    let base = base_validation(config);
    let allowed = config.algorithms.clone();
    let cache = match source {
        KeySource::File(path) => {
            let json = std::fs::read(&path).map_err(|e| {
                ServerError::config(
                    "serve.oauth.jwks-file",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            let keys = Keys::parse(&json, &base, &allowed)
                .map_err(|e| ServerError::config("serve.oauth.jwks-file", e))?;
            if keys.is_empty() {
                return Err(ServerError::config(
                    "serve.oauth.jwks-file",
                    "the key set has no usable key",
                ));
            }
            KeyCache::fixed(keys, base, allowed)
        }
        KeySource::Url { url, allow_http } => {
            let fetch: Fetch = Arc::new(move || {
                let url = url.clone();
                Box::pin(
                    async move { warden_mcp::fetch(&url, allow_http, keys::MAX_JWKS_BYTES).await },
                )
            });
            KeyCache::fetched(fetch, base, allowed)
        }
    };
    let agents = agents.iter().map(|a| (*a).to_owned()).collect();
    Ok(JwtVerifier::new(config, Arc::new(cache), agents))
}

/// The listener's resource server over `verifier`.
pub fn resource_server(config: &OAuthConfig, verifier: Arc<JwtVerifier>) -> ResourceServer {
    ResourceServer {
        verifier,
        resource: config.audience.clone(),
        authorization_servers: vec![config.issuer.clone()],
        scopes: config.required_scopes.clone(),
    }
}

#[cfg(test)]
mod tests;
