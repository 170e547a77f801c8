//! Where an HTTP host keeps the MCP sessions of clients on protocol
//! revisions before 2026-07-28 (what each client's `initialize` said), so
//! that any replica sharing the host's state, or the host after a restart,
//! takes a session over without the client initializing again. A session
//! is no authority: every request carries its own bearer token, which
//! says which agent it acts for.

use crate::JournalError;

/// Durable MCP session states, keyed by session id. The keeper decides
/// how long a session lives; an expired one is never loaded.
pub trait SessionStates: Send + Sync + std::fmt::Debug {
    /// The state kept for session `id`, if any.
    fn load(&self, id: &str) -> Result<Option<serde_json::Value>, JournalError>;
    /// Keeps `state` for session `id`, replacing what was kept.
    fn store(&self, id: &str, state: &serde_json::Value) -> Result<(), JournalError>;
    /// Forgets session `id`: its client ended it.
    fn remove(&self, id: &str) -> Result<(), JournalError>;
}
