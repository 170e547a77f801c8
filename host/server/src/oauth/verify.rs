//! Access-token validation: a JWT's signature by one of the issuer's keys,
//! then `iss`, `aud`, `exp`, `nbf`, the required scopes, and the mapping
//! of its principal to an agent. Signatures and registered claims are
//! checked by `jsonwebtoken` (a maintained crate; see docs/oauth.md), not
//! by code of ours.
//!
//! Attacks it stops: tokens forged or altered (signature), minted for
//! another resource and replayed here (audience, RFC 8707), minted by
//! another issuer (issuer), expired or not yet valid ones, `alg: none` and
//! algorithm confusion (a key verifies only with its own allowed
//! algorithms), tokens lacking the scopes this server requires, a
//! principal acting as an agent nobody mapped it to, and one signing in to
//! the console as an operator no operator rule names (an agent's token
//! answering its own asks).

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Validation, decode, decode_header};
use serde_json::{Map, Value};
use warden_api::{BoxFuture, Principal};
use warden_mcp::{OperatorToken, Refusal, TokenVerifier, Verified};

use super::config::{ClaimRule, OAuthConfig, OperatorRule};
use super::keys::KeyCache;

/// Checks tokens of one issuer for one resource.
#[derive(Debug)]
pub struct JwtVerifier {
    keys: Arc<KeyCache>,
    required_scopes: Vec<String>,
    keep_claims: Vec<String>,
    rules: Vec<ClaimRule>,
    agent_claim: Option<String>,
    /// Who signs in to the console with an access token.
    operators: Vec<OperatorRule>,
    /// The configured agents (for `agent-claim`).
    agents: Vec<String>,
    /// Tokens verified a moment ago (`seen.rs`).
    seen: super::seen::Seen,
}

/// The validation every key starts from: issuer, audience, lifetime.
pub fn base_validation(config: &OAuthConfig) -> Validation {
    let mut v = Validation::new(jsonwebtoken::Algorithm::RS256);
    v.algorithms.clear();
    v.set_issuer(&[&config.issuer]);
    v.set_audience(&[&config.audience]);
    v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    v.validate_exp = true;
    v.validate_nbf = true;
    v.leeway = config.leeway_secs;
    v
}

fn invalid(description: impl Into<String>) -> Refusal {
    Refusal::InvalidToken {
        description: description.into(),
    }
}

fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet".to_owned(),
        ErrorKind::InvalidIssuer => "the token is from another issuer".to_owned(),
        ErrorKind::InvalidAudience => "the token is for another resource".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm => {
            "the token's algorithm is not allowed for its key".to_owned()
        }
        ErrorKind::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
        _ => "the token is malformed".to_owned(),
    }
}

/// A claim's value as text (strings as they are, other JSON as JSON).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The scopes of a token: `scope` (space-separated), else `scp` (a list or
/// a string).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => words(s),
        (None, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

impl JwtVerifier {
    pub fn new(config: &OAuthConfig, keys: Arc<KeyCache>, agents: Vec<String>) -> JwtVerifier {
        JwtVerifier {
            keys,
            required_scopes: config.required_scopes.clone(),
            keep_claims: config.keep_claims.clone(),
            rules: config.agents.clone(),
            agent_claim: config.agent_claim.clone(),
            operators: config.operators.clone(),
            agents,
            seen: super::seen::Seen::default(),
        }
    }

    /// The key cache (to fetch the keys before the first request).
    pub fn keys(&self) -> &Arc<KeyCache> {
        &self.keys
    }

    /// The whole check of one token, or the result of the same token's
    /// check a moment ago.
    pub async fn check(&self, token: &str) -> Result<Verified, Refusal> {
        let now = jsonwebtoken::get_current_timestamp();
        let generation = self.keys.generation();
        if let Some(verified) = self.seen.get(token, now, generation) {
            return Ok(verified);
        }
        let (verified, exp) = self.check_fully(token).await?;
        self.seen.put(token, &verified, exp, generation);
        Ok(verified)
    }

    /// The whole check of one token, and its `exp`, whether or not it
    /// was seen a moment ago (what a token's first request costs).
    pub async fn check_fully(&self, token: &str) -> Result<(Verified, u64), Refusal> {
        let claims = self.claims(token).await?;
        let principal = self.principal(&claims);
        let missing: Vec<&str> = self
            .required_scopes
            .iter()
            .filter(|s| !principal.scopes.contains(s))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::InsufficientScope {
                scope: self.required_scopes.join(" "),
                description: format!("the token lacks the scope {}", missing.join(" ")),
            });
        }
        let agent = self
            .agent(&claims, &principal)
            .ok_or_else(|| Refusal::NoAgent {
                description: "this principal is not mapped to an agent".to_owned(),
            })?;
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        Ok((Verified { agent, principal }, exp))
    }

    /// The operator a token names (a console sign-in): its claims
    /// checked as any token's, then an operator rule must match. The MCP
    /// scopes and the agent mapping do not apply.
    pub async fn check_operator(&self, token: &str) -> Result<OperatorToken, Refusal> {
        let claims = self.claims(token).await?;
        let principal = self.principal(&claims);
        if !self
            .operators
            .iter()
            .any(|rule| Self::has(&claims, &principal, &rule.claim, &rule.equals))
        {
            return Err(Refusal::NotAnOperator {
                description: "this principal is not an operator of this server".to_owned(),
            });
        }
        if principal.subject.trim().is_empty() {
            return Err(invalid(
                "the token names no subject to record answers under",
            ));
        }
        Ok(OperatorToken {
            actor: principal.subject,
            expires_at_s: claims.get("exp").and_then(Value::as_u64).unwrap_or(0),
        })
    }

    /// A token's claims, once its signature (by a key of the issuer's
    /// set), issuer, audience and lifetime are checked.
    async fn claims(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let header = decode_header(token).map_err(|e| invalid(describe(e.kind())))?;
        let keys = self.keys.find(header.kid.as_deref()).await;
        if keys.is_empty() {
            return Err(invalid("the token is signed by an unknown key"));
        }
        let mut last = invalid("the token is signed by an unknown key");
        let mut claims = None;
        for key in &keys {
            match decode::<Map<String, Value>>(token, &key.decoding, &key.validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(e) => last = invalid(describe(e.kind())),
            }
        }
        claims.ok_or(last)
    }

    fn principal(&self, claims: &Map<String, Value>) -> Principal {
        let string = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let kept: BTreeMap<String, String> = self
            .keep_claims
            .iter()
            .filter_map(|name| claims.get(name).map(|v| (name.clone(), text(v))))
            .collect();
        Principal {
            issuer: string("iss").unwrap_or_default(),
            subject: string("sub").unwrap_or_default(),
            client_id: string("client_id").or_else(|| string("azp")),
            scopes: scopes(claims),
            claims: kept,
        }
    }

    /// Whether a claim (by the names [`ClaimRule::claim`] documents) has
    /// `value`, or holds it as a member.
    fn has(claims: &Map<String, Value>, principal: &Principal, claim: &str, value: &str) -> bool {
        match claim {
            "scope" | "scp" => principal.scopes.iter().any(|s| s == value),
            "client_id" | "azp" => principal.client_id.as_deref() == Some(value),
            _ => match claims.get(claim) {
                Some(Value::Array(list)) => list.iter().any(|v| text(v) == value),
                Some(v) => text(v) == value,
                None => false,
            },
        }
    }

    fn agent(&self, claims: &Map<String, Value>, principal: &Principal) -> Option<String> {
        if let Some(rule) = self
            .rules
            .iter()
            .find(|r| Self::has(claims, principal, &r.claim, &r.equals))
        {
            return Some(rule.agent.clone());
        }
        let claim = self.agent_claim.as_deref()?;
        let named = match claim {
            "client_id" | "azp" => principal.client_id.clone()?,
            _ => claims.get(claim).and_then(Value::as_str)?.to_owned(),
        };
        self.agents.contains(&named).then_some(named)
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Verified, Refusal>> {
        Box::pin(self.check(token))
    }

    fn operator<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<OperatorToken, Refusal>> {
        Box::pin(self.check_operator(token))
    }
}
