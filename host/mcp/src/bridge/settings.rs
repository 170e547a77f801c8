//! What the operator configured for one bridged server, as the bridge uses
//! it. Everything that feeds a decision (category, action types,
//! specifiers, which tools are read-only) comes from here, never from the
//! upstream's own description of its tools.

use std::collections::BTreeMap;
use std::time::Duration;

use warden_api::{ActionType, Category};

/// Whose upstream session a call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionScope {
    /// One upstream session per agent: state an upstream keeps for its
    /// session never leaks from one agent to another.
    PerAgent,
    /// One upstream session for every agent.
    Shared,
}

/// One bridged server's settings.
#[derive(Debug, Clone)]
pub struct BridgeSettings {
    /// The namespace: advertised names are `{name}_{tool}`.
    pub name: String,
    pub category: Category,
    /// The action type of tools `actions` does not name.
    pub action_type: ActionType,
    /// Action types by upstream tool name.
    pub actions: BTreeMap<String, ActionType>,
    /// Specifier templates by upstream tool name (`{repo}`).
    pub specifiers: BTreeMap<String, String>,
    /// Upstream tools (`*` globs) without side effects; every other tool
    /// is treated as having them.
    pub read_only: Vec<String>,
    /// Upstream tools (`*` globs) published; empty publishes all.
    pub allow: Vec<String>,
    /// Upstream tools (`*` globs) never published, whatever `allow` says.
    pub deny: Vec<String>,
    pub max_tools: usize,
    pub max_schema_bytes: usize,
    pub max_result_bytes: usize,
    pub max_pages: usize,
    pub init_timeout: Duration,
    pub call_timeout: Duration,
    /// How long an agent's session may sit unused before it is shut down.
    pub idle_shutdown: Duration,
    pub session_scope: SessionScope,
    /// Whether tools need an approved definition pin to be published.
    pub pin: bool,
    /// Pins from the configuration: digest by upstream tool name.
    pub pins: BTreeMap<String, String>,
    /// Whether the server's forms (elicitation) are relayed to the
    /// caller's client; declined otherwise.
    pub allow_elicitation: bool,
    /// The secret values the server was given, by name: scrubbed from
    /// everything that leaves Warden.
    pub secrets: Vec<(String, String)>,
}

impl BridgeSettings {
    /// The largest message a session accepts from its server: a result
    /// at the size cap still arrives whole (and is then refused by size,
    /// with a clear error); anything far beyond it ends the session.
    pub fn max_message(&self) -> usize {
        self.max_result_bytes.saturating_mul(2) + (1 << 20)
    }

    /// Settings with the specification's defaults for `name`.
    pub fn new(name: &str, category: Category, action_type: ActionType) -> BridgeSettings {
        BridgeSettings {
            name: name.to_owned(),
            category,
            action_type,
            actions: BTreeMap::new(),
            specifiers: BTreeMap::new(),
            read_only: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            max_tools: 128,
            max_schema_bytes: 64 * 1024,
            max_result_bytes: 4 * 1024 * 1024,
            max_pages: 20,
            init_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(60),
            idle_shutdown: Duration::from_secs(600),
            session_scope: SessionScope::PerAgent,
            pin: true,
            allow_elicitation: false,
            pins: BTreeMap::new(),
            secrets: Vec::new(),
        }
    }

    /// Whether the upstream tool `tool` is published at all (allow and
    /// deny lists).
    pub(crate) fn lists_allow(&self, tool: &str) -> bool {
        let allowed = self.allow.is_empty() || self.allow.iter().any(|g| glob(g, tool));
        allowed && !self.deny.iter().any(|g| glob(g, tool))
    }

    pub(crate) fn is_read_only(&self, tool: &str) -> bool {
        self.read_only.iter().any(|g| glob(g, tool))
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of
/// characters (also none) and everything else for itself.
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_runs_of_characters() {
        assert!(glob("*", "anything"));
        assert!(glob("delete_*", "delete_repo"));
        assert!(!glob("delete_*", "undelete_repo"));
        assert!(glob("*_issue", "create_issue"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
        assert!(glob("echo", "echo"));
        assert!(!glob("echo", "echo2"));
        assert!(!glob("ab*ab", "ab"));
    }
}
