//! `[[bridge]]`: an external MCP server served as Warden tools, and
//! `[secrets]`, the named secrets bridges may be given.
//!
//! Keys are kebab-case like the rest of `warden.toml`; the snake_case
//! spellings of the bridge specification are accepted as aliases.
//! Everything that decides a call (category, action types, specifiers,
//! read-only tools, the default decision) is configuration: a bridged
//! server cannot choose any of it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use warden_api::net::NetPattern;

/// One bridged server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BridgeConfig {
    /// The namespace, `^[a-z][a-z0-9]{0,11}$`: tools are advertised as
    /// `{name}_{tool}`.
    pub name: String,
    /// `stdio` (default) or `http`.
    #[serde(default)]
    pub transport: BridgeTransport,
    /// The server's argv (stdio): a program and its arguments, never a
    /// shell string.
    #[serde(default)]
    pub command: Vec<String>,
    /// Where a stdio server runs: `docker` (the default) or `host` (only
    /// with `insecure-host-process = true`).
    pub runtime: Option<BridgeRuntime>,
    /// Allows `runtime = "host"`: the server runs as a process of the host,
    /// with the host's file system and network.
    #[serde(default, alias = "insecure_host_process")]
    pub insecure_host_process: bool,
    /// The image of a docker-runtime server (built locally).
    pub image: Option<String>,
    /// A docker-runtime server's network, or the non-public addresses an
    /// `http` server may have: `none` (default) or
    /// `{ allow = ["host:port", ...] }`.
    #[serde(default)]
    pub network: BridgeNetwork,
    /// Environment variables the server gets (nothing else is inherited;
    /// a host-runtime server also gets a fixed `PATH`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Secrets the server gets as environment variables: variable name to
    /// the name of a `[secrets]` entry. Values never appear on an argv and
    /// are redacted from everything the server returns.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// The endpoint of an `http` server (`https://`, or `http://` with
    /// `insecure-http = true`). A non-public address (loopback, private,
    /// link-local, metadata) is reached only when `network.allow` names it.
    pub url: Option<String>,
    /// Allows an `http://` URL: the session and its token cross the
    /// network unencrypted.
    #[serde(default, alias = "insecure_http", alias = "allow_insecure")]
    pub insecure_http: bool,
    /// An `http` server's credentials: `{ bearer = "NAME" }` sends the
    /// `[secrets]` entry NAME as a bearer token.
    #[serde(default)]
    pub auth: Option<BridgeAuth>,
    /// Category of every tool of this server (e.g. `mcp`, `external-data`).
    pub category: String,
    /// Action type of tools `actions` does not name. Default
    /// `external_data:request`.
    #[serde(default, alias = "action_type")]
    pub action_type: Option<String>,
    /// Action types by upstream tool name.
    #[serde(default)]
    pub actions: BTreeMap<String, String>,
    /// Specifier templates by upstream tool name (`{repo}`), for rules
    /// such as `gh_create_issue(org/*)`.
    #[serde(default)]
    pub specifiers: BTreeMap<String, String>,
    /// Upstream tools (`*` globs) that have no side effects; every other
    /// tool is treated as having them, whatever the server says.
    #[serde(default, alias = "read_only")]
    pub read_only: Vec<String>,
    /// The most a call of a tool no rule names gets: `ask` (default),
    /// `deny`, or `allow` (the agent's mode decides).
    #[serde(default, alias = "default_decision")]
    pub default_decision: DefaultDecision,
    /// Which upstream tools are published at all.
    #[serde(default)]
    pub tools: ToolLists,
    #[serde(default, alias = "max_tools")]
    pub max_tools: Option<usize>,
    #[serde(default, alias = "max_schema_bytes")]
    pub max_schema_bytes: Option<usize>,
    #[serde(default, alias = "max_result_bytes")]
    pub max_result_bytes: Option<usize>,
    /// `20s`, `500ms`, `10m`, `1h`. Default 20 s.
    #[serde(default, alias = "init_timeout")]
    pub init_timeout: Option<String>,
    /// Default 60 s.
    #[serde(default, alias = "call_timeout")]
    pub call_timeout: Option<String>,
    /// An unused session ends after this long. Default 10 min.
    #[serde(default, alias = "idle_shutdown")]
    pub idle_shutdown: Option<String>,
    /// `per-agent` (default): each agent its own upstream session;
    /// `shared`: one for all.
    #[serde(default, alias = "session_scope")]
    pub session_scope: ScopeConfig,
    /// Whether a tool needs an operator-approved definition pin to be
    /// published (default true).
    #[serde(default = "yes")]
    pub pin: bool,
    /// Approved definition digests by upstream tool name, besides those
    /// approved with `warden bridge approve`.
    #[serde(default)]
    pub pins: BTreeMap<String, String>,
    /// Relay the server's forms (elicitation) to the person behind the
    /// calling agent's client, the message prefixed with the bridge's
    /// name; declined otherwise (default false).
    #[serde(default, alias = "allow_elicitation")]
    pub allow_elicitation: bool,
}

/// `auth = { bearer = "NAME" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeAuth {
    /// The name of a `[secrets]` entry.
    pub bearer: String,
}

fn yes() -> bool {
    true
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum BridgeTransport {
    #[default]
    Stdio,
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BridgeRuntime {
    Docker,
    Host,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BridgeNetwork {
    /// `"none"`.
    Named(NetworkName),
    /// `{ allow = ["api.github.com:443"] }`.
    Allow { allow: Vec<String> },
}

impl BridgeNetwork {
    /// The allowlist's patterns (none for `"none"`); an error names the
    /// index of the entry that is not a pattern.
    pub fn patterns(&self) -> Result<Vec<NetPattern>, (usize, String)> {
        match self {
            BridgeNetwork::Named(_) => Ok(Vec::new()),
            BridgeNetwork::Allow { allow } => allow
                .iter()
                .enumerate()
                .map(|(j, spec)| spec.parse().map_err(|e| (j, format!("`{spec}`: {e}"))))
                .collect(),
        }
    }
}

impl Default for BridgeNetwork {
    fn default() -> Self {
        BridgeNetwork::Named(NetworkName::None)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkName {
    None,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum DefaultDecision {
    Allow,
    #[default]
    Ask,
    Deny,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeConfig {
    #[default]
    #[serde(alias = "per_agent")]
    PerAgent,
    Shared,
}

/// `tools = { allow = [...], deny = [...] }`: upstream names or `*` globs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolLists {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// A named secret: its value from an environment variable of Warden's, or
/// from a file (read once at start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SecretSource {
    pub env: Option<String>,
    /// Relative paths resolve against the configuration file.
    pub file: Option<PathBuf>,
}

/// `20s`, `500ms`, `10m`, `1h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as `20s`, `500ms`, `10m`"))?;
    let d = match unit.trim() {
        "" | "s" => Duration::from_secs(n),
        "ms" => Duration::from_millis(n),
        "m" | "min" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use ms, s, m or h)"
            ));
        }
    };
    if d.is_zero() {
        return Err(format!("`{text}` is zero"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 days").is_err());
    }

    #[test]
    fn a_bridge_reads_in_either_spelling() {
        let kebab: BridgeConfig = toml::from_str(
            r#"
name = "gh"
command = ["node", "server.js"]
runtime = "host"
insecure-host-process = true
category = "mcp"
default-decision = "deny"
session-scope = "shared"
network = { allow = ["api.github.com:443"] }
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let snake: BridgeConfig = toml::from_str(
            r#"
name = "gh"
command = ["node", "server.js"]
runtime = "host"
insecure_host_process = true
category = "mcp"
default_decision = "deny"
session_scope = "shared"
network = { allow = ["api.github.com:443"] }
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kebab, snake);
        assert_eq!(kebab.session_scope, ScopeConfig::Shared);
        let none: BridgeConfig =
            toml::from_str("name = \"a\"\ncategory = \"mcp\"\nnetwork = \"none\"\n")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(none.network, BridgeNetwork::default());
        assert!(
            toml::from_str::<BridgeConfig>("name = \"a\"\ncategory = \"mcp\"\nnetwork = \"all\"\n")
                .is_err()
        );
        assert!(
            toml::from_str::<BridgeConfig>("name = \"a\"\ncategory = \"mcp\"\nshell = \"x\"\n")
                .is_err()
        );
    }
}
