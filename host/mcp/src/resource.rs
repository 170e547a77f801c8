//! The HTTP listener as an OAuth 2.1 resource server (the MCP
//! authorization specification): protected resource metadata (RFC 9728)
//! for discovery, and `WWW-Authenticate` challenges (RFC 6750) that point
//! clients at it.
//!
//! Attacks it stops: a request with a forged, expired, foreign (issued
//! for another resource or by another issuer) or under-scoped access
//! token acting as an agent — every token goes through the verifier,
//! whose refusal becomes a 401 `invalid_token` or a 403
//! `insufficient_scope`; and header injection through a refusal's text
//! (the description is reduced to printable ASCII without quotes or
//! backslashes before it enters the header).
//!
//! This crate knows no JWT: the verifier behind [`TokenVerifier`] (the
//! server crate's) checks signatures and claims. A client's token is never
//! forwarded anywhere: bridged servers get their own configured
//! credentials only.

use std::sync::Arc;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};
use warden_api::{BoxFuture, Principal};

/// The well-known path of protected resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// A token that passed every check, and the agent its principal acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub agent: String,
    pub principal: Principal,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Malformed, badly signed, expired, not yet valid, for another
    /// audience or from another issuer, or signed by an unknown key: 401.
    InvalidToken { description: String },
    /// Valid, but without the scopes this resource requires: 403.
    InsufficientScope { scope: String, description: String },
    /// Valid, but its principal maps to no agent: 403.
    NoAgent { description: String },
    /// Valid, but presented to sign in to the console by a principal no
    /// operator rule names.
    NotAnOperator { description: String },
}

/// An operator's access token that passed every check: who signs in to
/// the console, and until when the token is valid (seconds since the
/// epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorToken {
    pub actor: String,
    pub expires_at_s: u64,
}

/// Checks access tokens (signature, issuer, audience, lifetime, scopes)
/// and maps their principal to an agent, or for the console, to an
/// operator.
pub trait TokenVerifier: Send + Sync + std::fmt::Debug {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, Refusal>>;
    /// The operator `token` names (a console sign-in): checked as any
    /// token (signature, issuer, audience, lifetime), then against the
    /// operator rules; a token no rule names (an agent's) is refused.
    fn operator<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<OperatorToken, Refusal>>;
}

/// What the listener says about itself as a protected resource, and the
/// verifier of its tokens.
#[derive(Debug, Clone)]
pub struct ResourceServer {
    pub verifier: Arc<dyn TokenVerifier>,
    /// The canonical URL of the MCP endpoint (the tokens' audience,
    /// RFC 8707), e.g. `https://warden.example/mcp`.
    pub resource: String,
    /// The issuers whose tokens are accepted.
    pub authorization_servers: Vec<String>,
    /// The scopes every request needs.
    pub scopes: Vec<String>,
}

impl ResourceServer {
    /// The resource's path (`/mcp` of `https://host/mcp`), or empty.
    fn resource_path(&self) -> &str {
        let after_scheme = self
            .resource
            .split_once("://")
            .map_or(self.resource.as_str(), |(_, rest)| rest);
        let path = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
        path.split(['?', '#'])
            .next()
            .unwrap_or("")
            .trim_end_matches('/')
    }

    /// Where the metadata is: the well-known path inserted between the
    /// resource's host and path (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        let path = self.resource_path();
        let origin = self
            .resource
            .strip_suffix(path)
            .unwrap_or(&self.resource)
            .trim_end_matches('/');
        let origin = match origin.split_once("://") {
            Some((scheme, rest)) => {
                format!("{scheme}://{}", rest.split('/').next().unwrap_or(rest))
            }
            None => origin.to_owned(),
        };
        format!("{origin}{METADATA_PATH}{path}")
    }

    /// The paths the metadata is served at: the path-specific form and
    /// the bare well-known path (for clients that try the root first).
    pub fn metadata_paths(&self) -> Vec<String> {
        let path = self.resource_path();
        let mut paths = vec![METADATA_PATH.to_owned()];
        if !path.is_empty() {
            paths.push(format!("{METADATA_PATH}{path}"));
        }
        paths
    }

    /// The protected resource metadata document (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "Warden",
        })
    }

    /// The `WWW-Authenticate` value of a challenge, with an error code
    /// when a token was presented and refused.
    fn challenge(&self, error: Option<(&str, &str)>, scope: &str) -> String {
        let mut parts = Vec::new();
        if let Some((code, description)) = error {
            parts.push(format!("error=\"{code}\""));
            parts.push(format!("error_description=\"{}\"", clean(description)));
        }
        parts.push(format!("resource_metadata=\"{}\"", self.metadata_url()));
        if !scope.is_empty() {
            parts.push(format!("scope=\"{}\"", clean(scope)));
        }
        format!("Bearer {}", parts.join(", "))
    }

    /// 401 for a request without a usable token.
    pub fn unauthorized(&self, refusal: Option<&Refusal>) -> Response {
        let scope = self.scopes.join(" ");
        let (status, value) = match refusal {
            None => (StatusCode::UNAUTHORIZED, self.challenge(None, &scope)),
            Some(Refusal::InvalidToken { description }) => (
                StatusCode::UNAUTHORIZED,
                self.challenge(Some(("invalid_token", description)), &scope),
            ),
            Some(Refusal::InsufficientScope { scope, description }) => (
                StatusCode::FORBIDDEN,
                self.challenge(Some(("insufficient_scope", description)), scope),
            ),
            Some(Refusal::NoAgent { description } | Refusal::NotAnOperator { description }) => (
                StatusCode::FORBIDDEN,
                self.challenge(Some(("invalid_token", description)), &scope),
            ),
        };
        let body = match refusal {
            Some(
                Refusal::InvalidToken { description }
                | Refusal::InsufficientScope { description, .. }
                | Refusal::NoAgent { description }
                | Refusal::NotAnOperator { description },
            ) => description.clone(),
            None => "an access token is required".to_owned(),
        };
        (status, [(http::header::WWW_AUTHENTICATE, value)], body).into_response()
    }

    /// The metadata document as a response.
    pub fn metadata_response(&self) -> Response {
        Json(self.metadata()).into_response()
    }
}

/// Text safe inside a quoted header parameter.
fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| (' '..='~').contains(c) && *c != '"' && *c != '\\')
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests;
