//! Plugins in a running host, as operators reach them through the admin
//! API: list, install, remove. The MCP crate only routes; what installing
//! means (verification, the registry, swapping tools in) belongs to the
//! host behind [`PluginAdmin`].

use std::path::PathBuf;

use serde_json::Value;

use crate::{Attribution, BoxFuture};

/// Why an operator's plugin change was not made. The message is shown to
/// the operator as it is; the cause, when there is one, is kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The change is not allowed as asked (a plugin from the config file,
    /// a name that is not loaded, a conflict); nothing changed.
    #[error("{0}")]
    Refused(String),
    /// The change failed; nothing changed.
    #[error("{what}")]
    Failed {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl AdminError {
    pub fn failed(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> AdminError {
        AdminError::Failed {
            what: what.into(),
            source: Box::new(source),
        }
    }
}

pub trait PluginAdmin: Send + Sync {
    /// The installed and loaded plugins.
    fn list(&self) -> BoxFuture<'_, Result<Value, AdminError>>;
    /// Installs a component file or a directory of them (paths on the
    /// host's machine), replacing plugins of the same names.
    fn install(&self, path: PathBuf) -> BoxFuture<'_, Result<Value, AdminError>>;
    /// Removes the plugin called `name`, on `by`'s word (audited).
    fn remove(&self, name: String, by: Attribution) -> BoxFuture<'_, Result<Value, AdminError>>;
}

/// Bridged MCP servers in a running host, as operators reach them through
/// the admin API: their status, approving and revoking their tools'
/// definitions, and restarting them. Approving pins each named tool's
/// definition as the server lists it now; revoking removes pins.
pub trait BridgeAdmin: Send + Sync {
    /// The status of every bridged server (or of `name`).
    fn status(&self, name: Option<String>) -> BoxFuture<'_, Result<Value, AdminError>>;
    /// Approves `tools` of `name` (every listed tool when empty), on
    /// `by`'s word (audited).
    fn approve(
        &self,
        name: String,
        tools: Vec<String>,
        by: Attribution,
    ) -> BoxFuture<'_, Result<Value, AdminError>>;
    /// Removes the pins of `tools` of `name` (all when empty).
    fn revoke(
        &self,
        name: String,
        tools: Vec<String>,
        by: Attribution,
    ) -> BoxFuture<'_, Result<Value, AdminError>>;
    /// Ends the server's sessions and lists its tools again.
    fn restart(&self, name: String) -> BoxFuture<'_, Result<Value, AdminError>>;
}

/// The toolsmith's blueprints, as operators reach them through the admin
/// API: list, show what an approval would mean, approve creating the
/// tool (`tool:create`, bound to the digests as they are now; `seen`,
/// when given, must be the blueprint digest the person looked at), and
/// reject. Only operators reach this; agents never do.
pub trait ToolsmithAdmin: Send + Sync {
    fn blueprints(&self) -> Result<Value, AdminError>;
    fn show(&self, id: u64) -> Result<Value, AdminError>;
    fn approve(&self, id: u64, seen: Option<String>, by: Attribution) -> Result<Value, AdminError>;
    fn reject(&self, id: u64, by: Attribution) -> Result<Value, AdminError>;
    /// Retires the active version of generated tool `name`; with
    /// `rollback`, the version it superseded becomes active again.
    fn retire(&self, name: &str, rollback: bool, by: Attribution) -> Result<Value, AdminError>;
    /// Every built tool's signed statement checked against its component.
    fn verify(&self) -> Result<Value, AdminError>;
}
