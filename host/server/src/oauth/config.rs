//! `[serve.oauth]`: the HTTP listener as an OAuth 2.1 resource server.
//! Parsed strictly; [`OAuthConfig::check`] refuses what parses but cannot
//! work, naming the key.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ServerError;

/// Accept OAuth access tokens (JWTs) from one issuer beside the static
/// `[[serve.tokens]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier: tokens' `iss` must be
    /// exactly this, and the metadata names it.
    pub issuer: String,
    /// The canonical URL of this server's MCP endpoint (e.g.
    /// `https://warden.example/mcp`): tokens' `aud` must contain it
    /// (RFC 8707), and it is the metadata's `resource`.
    pub audience: String,
    /// Where the issuer publishes its keys (a JWK set). HTTPS, or plain
    /// HTTP to a loopback address. Exactly one of `jwks-url` and
    /// `jwks-file`.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// A JWK set in a file (static keys; relative paths resolve against
    /// the config file's directory).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// Scopes every request needs (all of them). Empty: none.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// Signature algorithms accepted. Default: RS256, ES256, EdDSA. HMAC
    /// algorithms are not offered (a public key set holds no secrets).
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<JwtAlgorithm>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// Further claims kept in the principal (audit records, logs).
    #[serde(default)]
    pub keep_claims: Vec<String>,
    /// Which agent a principal acts as: the first matching entry wins.
    #[serde(default)]
    pub agents: Vec<ClaimRule>,
    /// Else: the agent named by this claim's value (e.g. `client_id`),
    /// when such an agent is configured. Unset: a principal no entry
    /// matches is refused.
    #[serde(default)]
    pub agent_claim: Option<String>,
    /// Which principals are operators: they sign in to the console with
    /// their access token (any entry matching). Give operators a claim no
    /// agent's token carries (a scope of their own, their subjects): an
    /// agent whose token signs in could answer its own asks.
    #[serde(default)]
    pub operators: Vec<OperatorRule>,
}

/// A principal whose claim has a value is an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OperatorRule {
    /// The claim, as for `agents`. Default: `sub`.
    #[serde(default = "default_claim")]
    pub claim: String,
    /// The value (for a list claim, or `scope`: one of its members).
    pub equals: String,
}

/// A principal whose claim has a value acts as an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClaimRule {
    pub agent: String,
    /// The claim: `sub`, `client_id` (or `azp`), `scope`, or any other
    /// claim of the token. Default: `sub`.
    #[serde(default = "default_claim")]
    pub claim: String,
    /// The value (for a list claim, or `scope`: one of its members).
    pub equals: String,
}

/// The JWS algorithms a token may be signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum JwtAlgorithm {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
}

fn default_algorithms() -> Vec<JwtAlgorithm> {
    vec![
        JwtAlgorithm::RS256,
        JwtAlgorithm::ES256,
        JwtAlgorithm::EdDSA,
    ]
}

fn default_leeway() -> u64 {
    30
}

fn default_claim() -> String {
    "sub".to_owned()
}

/// Where the keys come from, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Url { url: String, allow_http: bool },
    File(PathBuf),
}

fn at(key: &str) -> String {
    format!("serve.oauth.{key}")
}

/// An absolute `http(s)` URL without a fragment.
fn url(key: &str, value: &str) -> Result<url::Url, ServerError> {
    let parsed = url::Url::parse(value)
        .map_err(|e| ServerError::config(at(key), format!("`{value}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "https" | "http") || parsed.host().is_none() {
        return Err(ServerError::config(
            at(key),
            format!("`{value}` must be an http or https URL with a host"),
        ));
    }
    if parsed.fragment().is_some() {
        return Err(ServerError::config(
            at(key),
            format!("`{value}` must not have a fragment"),
        ));
    }
    Ok(parsed)
}

fn is_loopback(parsed: &url::Url) -> bool {
    match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

impl OAuthConfig {
    /// Refuses a section that parses but cannot work; `agents` are the
    /// configured agent names. Returns where the keys come from.
    pub fn check(&self, agents: &[&str]) -> Result<KeySource, ServerError> {
        if self.issuer.trim().is_empty() {
            return Err(ServerError::config(at("issuer"), "must not be empty"));
        }
        url("audience", &self.audience)?;
        if self.algorithms.is_empty() {
            return Err(ServerError::config(
                at("algorithms"),
                "name at least one algorithm",
            ));
        }
        for (i, rule) in self.agents.iter().enumerate() {
            if !agents.contains(&rule.agent.as_str()) {
                return Err(ServerError::config(
                    format!("serve.oauth.agents[{i}].agent"),
                    format!("agent `{}` is not configured", rule.agent),
                ));
            }
            if rule.claim.trim().is_empty() {
                return Err(ServerError::config(
                    format!("serve.oauth.agents[{i}].claim"),
                    "must not be empty",
                ));
            }
        }
        for (i, rule) in self.operators.iter().enumerate() {
            if rule.claim.trim().is_empty() || rule.equals.trim().is_empty() {
                return Err(ServerError::config(
                    format!("serve.oauth.operators[{i}]"),
                    "name a claim and the value that makes an operator",
                ));
            }
            if let Some(agent) = self
                .agents
                .iter()
                .find(|a| a.claim == rule.claim && a.equals == rule.equals)
            {
                return Err(ServerError::config(
                    format!("serve.oauth.operators[{i}]"),
                    format!(
                        "`{} = {}` also makes a principal agent `{}`: that agent's token would sign \
                         in to the console and answer its own asks; give operators a claim of their own",
                        rule.claim, rule.equals, agent.agent
                    ),
                ));
            }
        }
        if self.agents.is_empty() && self.agent_claim.is_none() {
            return Err(ServerError::config(
                at("agents"),
                "map principals to agents: give `[[serve.oauth.agents]]` entries or `agent-claim`",
            ));
        }
        match (&self.jwks_url, &self.jwks_file) {
            (Some(value), None) => {
                let parsed = url("jwks-url", value)?;
                let allow_http = is_loopback(&parsed);
                if parsed.scheme() == "http" && !allow_http {
                    return Err(ServerError::config(
                        at("jwks-url"),
                        "plain http is only allowed to a loopback address; use https",
                    ));
                }
                Ok(KeySource::Url {
                    url: value.clone(),
                    allow_http,
                })
            }
            (None, Some(path)) => Ok(KeySource::File(path.clone())),
            _ => Err(ServerError::config(
                at("jwks-url"),
                "give exactly one of `jwks-url` and `jwks-file`",
            )),
        }
    }
}
