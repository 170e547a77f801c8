//! Who stands behind a call that signed in with an OAuth access token:
//! the token's issuer, subject, client and the claims the operator chose
//! to keep. Transports fill it in; the policy and the audit log read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The verified identity behind an access token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Principal {
    /// The token's `iss`.
    pub issuer: String,
    /// The token's `sub`.
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id`, else `azp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The token's scopes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Further claims the operator selected, as text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, String>,
}
