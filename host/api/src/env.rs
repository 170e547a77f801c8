//! Environment grants: which variables a call sees, and their values.
//!
//! Attack: a secret leaking through the host. Values are held in
//! [`Secret`], whose `Debug`, `Display` and `Serialize` never show the
//! value, so a grant can be logged or printed without exposing it; only
//! [`Secret::expose`] reads it, at the one place the value is handed to
//! the guest.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use crate::SpecError;

/// A value that must not appear in logs, errors or results.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself. Call only where it is handed to the guest.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// One environment variable granted to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EnvGrant {
    pub key: String,
    pub value: Secret,
}

/// Checks an environment variable name: non-empty, `[A-Za-z_][A-Za-z0-9_]*`.
pub fn check_env_key(key: &str) -> Result<(), SpecError> {
    let mut chars = key.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(SpecError::Manifest(format!(
            "`{key}` is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
        )))
    }
}
