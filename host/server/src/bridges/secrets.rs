//! `[secrets]`: named secret values, read once at start from Warden's own
//! environment or from a file. Errors name the secret and where its value
//! was to come from, never the value.

use std::collections::BTreeMap;

use warden_mcp::bridge::MIN_SECRET_LEN;

use super::config::SecretSource;
use crate::ServerError;

/// The value of the secret `name`.
pub fn resolve(
    secrets: &BTreeMap<String, SecretSource>,
    name: &str,
    at: &str,
) -> Result<String, ServerError> {
    let source = secrets.get(name).ok_or_else(|| {
        ServerError::config(
            at,
            format!("names the secret `{name}`, which `[secrets]` does not define"),
        )
    })?;
    let here = format!("secrets.{name}");
    let value = match (&source.env, &source.file) {
        (Some(var), None) => std::env::var(var)
            .map_err(|_| ServerError::config(&here, format!("env `{var}` is not set")))?,
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|e| ServerError::config(&here, format!("reading {}: {e}", file.display())))?
            .trim_end_matches(['\n', '\r'])
            .to_owned(),
        _ => {
            return Err(ServerError::config(
                here,
                "give exactly one of `env` and `file`",
            ));
        }
    };
    if value.len() < MIN_SECRET_LEN {
        return Err(ServerError::config(
            here,
            format!("the value is shorter than {MIN_SECRET_LEN} characters, too short to redact"),
        ));
    }
    Ok(value)
}
