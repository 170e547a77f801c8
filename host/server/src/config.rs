//! `warden.toml`: plugins and their grants, the workspace, limits, and the
//! policy (agents, rules, levels, action types). Parsed strictly: an
//! unknown key, mode or scope fails with its key path; categories, action
//! types, levels and rules are checked when the policy is compiled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use warden_policy::config::{AgentConfig, LevelConfig, PolicyConfig, RulesConfig};

use crate::ServerError;
pub use crate::signers::{PublisherConfig, SignersConfig};

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// Where Warden keeps state (compile cache, ...). Default `.warden`.
    pub state_dir: Option<PathBuf>,
    /// The directory agents work in, as their paths name it (a guest path
    /// such as `/workspace`). Default: the first plugin grant's guest path.
    pub workspace: Option<String>,
    /// The project directory, if wider than the workspace.
    pub project: Option<String>,
    /// What `~` means in agents' paths and commands.
    pub home: Option<String>,
    /// Plugins to load.
    #[serde(default)]
    pub plugins: Vec<PluginConfig>,
    /// Per-call limits.
    #[serde(default)]
    pub limits: LimitsConfig,
    // The policy keys below mirror `warden_policy::config::PolicyConfig`
    // field by field: serde cannot combine `flatten` with
    // `deny_unknown_fields`, and strictness matters more here.
    /// Custom action types (`category:action`), registered explicitly.
    #[serde(default)]
    pub action_types: Vec<String>,
    /// Rules for every agent.
    #[serde(default)]
    pub rules: RulesConfig,
    /// Custom access levels.
    #[serde(default)]
    pub levels: BTreeMap<String, LevelConfig>,
    /// Agents by id.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Denied and protected paths, for every tool (added to the defaults).
    #[serde(default)]
    pub protect: warden_policy::config::ProtectConfig,
    /// External MCP servers served as tools (`[[bridge]]`), see
    /// `docs/bridge.md`.
    #[serde(default, rename = "bridge")]
    pub bridges: Vec<crate::bridges::BridgeConfig>,
    /// Named secrets (`[secrets.NAME]` with `env` or `file`) bridges may be
    /// given.
    #[serde(default)]
    pub secrets: BTreeMap<String, crate::bridges::SecretSource>,
    /// Docker sandboxes for the terminal, code, browser and desktop tools.
    /// Absent: those tools are not offered.
    pub sandbox: Option<warden_sandbox::SandboxConfig>,
    /// `warden serve`: tokens, approvals, HTTP checks, disclosure.
    #[serde(default)]
    pub serve: ServeConfig,
    /// Durable state: the database in the state directory and the audit log.
    #[serde(default)]
    pub state: StateConfig,
    /// What `request_capability` may grant without a person.
    #[serde(default)]
    pub capability_grants: CapabilityGrantsConfig,
    /// The toolsmith: the gap log of requests no tool serves.
    #[serde(default)]
    pub toolsmith: crate::gaps::ToolsmithConfig,
    /// The operator console at `/console` on `warden serve --http` (see
    /// `docs/console.md`).
    #[serde(default)]
    pub console: ConsoleConfig,
    /// Progressive trust: how agents earn levels. Default: disabled.
    #[serde(default)]
    pub progressive_trust: warden_policy::trust::TrustConfig,
    /// Whose signatures admit a plugin, and what is revoked.
    #[serde(default)]
    pub signers: SignersConfig,
    /// The older name of `[signers]`, read with a deprecation warning.
    #[serde(default, rename = "trust", skip_serializing)]
    #[schemars(skip)]
    pub(crate) legacy_signers: Option<SignersConfig>,
    /// What the file spelled the old way (reported by `warden config check`).
    #[serde(skip)]
    pub(crate) deprecations: Vec<String>,
    /// Grants of installed and watched plugins, by plugin name; `"*"`
    /// applies to those without an entry of their own. Without either, an
    /// installed plugin gets no directories, network or environment.
    #[serde(default)]
    pub plugin_grants: BTreeMap<String, GrantsConfig>,
}

/// Bounds of automatic capability grants. Network egress, credentials,
/// deployment, tool creation and level changes always need a person,
/// whatever is listed here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct CapabilityGrantsConfig {
    /// Capabilities granted automatically when requested, as patterns:
    /// `tool:fs_write`, `category:file-system`, `action:code:*`. Default: none.
    pub auto_grant: Vec<String>,
    /// The longest automatic grant, in seconds. Default 3600.
    pub max_auto_ttl_secs: u64,
    /// The longest grant a person may approve, in seconds: a longer
    /// request is granted for this long. Default 86400 (a day).
    pub max_ttl_secs: u64,
    /// More capabilities that always need a person.
    pub high_risk: Vec<String>,
}

impl Default for CapabilityGrantsConfig {
    fn default() -> Self {
        CapabilityGrantsConfig {
            auto_grant: Vec::new(),
            max_auto_ttl_secs: 3600,
            max_ttl_secs: warden_policy::DEFAULT_MAX_TTL_MS / 1000,
            high_risk: Vec::new(),
        }
    }
}

impl CapabilityGrantsConfig {
    /// The bounds, with errors naming the key.
    pub fn bounds(&self) -> Result<warden_policy::GrantBounds, ServerError> {
        let parse = |list: &[String], key: &str| {
            list.iter()
                .enumerate()
                .map(|(i, c)| {
                    c.parse::<warden_policy::Capability>().map_err(|e| {
                        ServerError::config(format!("capability-grants.{key}[{i}]"), e.to_string())
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(warden_policy::GrantBounds {
            auto_grant: parse(&self.auto_grant, "auto-grant")?,
            max_auto_ttl_ms: self.max_auto_ttl_secs.saturating_mul(1000),
            max_ttl_ms: self.max_ttl_secs.saturating_mul(1000),
            high_risk: parse(&self.high_risk, "high-risk")?,
        })
    }
}

/// The operator console: where a person signs in with an admin token
/// and answers the approvals that wait for an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ConsoleConfig {
    /// Serve the console. Default: on when `[[serve.admin-tokens]]` are
    /// configured (a person signs in with one), off otherwise.
    pub enabled: Option<bool>,
    /// Mark the session cookie `Secure`: set it when people reach the
    /// console over HTTPS (a TLS-terminating proxy in front of Warden).
    /// Default: on unless the listener is on a loopback address.
    pub secure_cookie: Option<bool>,
    /// How long a sign-in lasts, in minutes.
    pub session_minutes: u64,
    /// The console's address as people reach it: scheme, host and port,
    /// e.g. `https://warden.example.org` behind a TLS-terminating proxy.
    /// Agents whose asks wait for an operator get a link to the pending
    /// approval under it, when their client takes links (URL
    /// elicitation, MCP 2026-07-28). Default: the listener's address,
    /// unless it is a wildcard one (then no links are sent).
    pub url: Option<String>,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            enabled: None,
            secure_cookie: None,
            session_minutes: 8 * 60,
            url: None,
        }
    }
}

/// The state database: `warden.db` in the state directory, or a
/// PostgreSQL database shared by replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct StateConfig {
    /// A PostgreSQL database for the state instead of `warden.db`:
    /// `postgres://user@host:port/database` (with the driver's options,
    /// e.g. `?sslmode=require`). Keep the password out of the file:
    /// `PGPASSWORD` or `~/.pgpass` supply it. The host key stays in the
    /// state directory; each key appends to its own audit chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A key file every replica of one deployment holds (created, owner-
    /// only, when missing; relative to this file): the fingerprints that
    /// bind an approval to a call's arguments and the sealed request
    /// states of asks are keyed from it instead of the host key, so an
    /// ask, its answer and the agent's retry may each reach another
    /// replica. Without it, each host keys them with its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_key: Option<PathBuf>,
    /// The deployment's audit root key (a `warden keygen` secret key
    /// file every replica is handed; relative to this file; never
    /// created). Each replica endorses its own host key with it at start,
    /// and `warden audit verify` then refuses any chain in the shared
    /// database whose key the root did not endorse. Needs `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_root_key: Option<PathBuf>,
    /// Audit records of decisions carry the call's arguments. Default
    /// false: only their sha256 digest is kept.
    pub audit_args: bool,
    /// `normal` (default): synced at checkpoints; nothing is lost to a
    /// killed host, the last commits may be lost to a power failure.
    /// `full`: every commit is synced before the host reports it, which
    /// survives a machine crash too, at one disk sync per record.
    /// (PostgreSQL commits as its server is configured:
    /// `synchronous_commit`.)
    pub durability: Durability,
}

/// `[state] durability`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    Full,
    #[default]
    Normal,
}

/// Grants of one plugin, spelled as in `[[plugins]]` (whose entries can't
/// embed this table: serde cannot combine `flatten` with
/// `deny_unknown_fields`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GrantsConfig {
    /// Directory grants: `HOST_DIR[:GUEST_DIR][:ro|rw]`.
    #[serde(default)]
    pub grant_fs: Vec<String>,
    /// Network grants, as in `[[plugins]]`.
    #[serde(default)]
    pub grant_net: Vec<String>,
    /// Environment grants: `KEY` or `KEY=VALUE`.
    #[serde(default)]
    pub grant_env: Vec<String>,
}

/// The longest `[serve] busy-poll-us` allowed.
pub const MAX_BUSY_POLL_US: u64 = 1000;

/// The MCP server's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ServeConfig {
    /// Bearer tokens for `--http`, each acting as one agent. Required to
    /// listen beyond loopback.
    pub tokens: Vec<TokenConfig>,
    /// Tokens that may use the admin API (`/admin`) over HTTP. The admin
    /// socket in the state directory needs none.
    pub admin_tokens: Vec<SecretConfig>,
    /// Unanswered approvals (and answers nobody retried for) expire as
    /// denials after this many seconds.
    pub approval_timeout_secs: u64,
    /// Browser origins allowed to call over HTTP (`scheme://host:port`,
    /// `:*` for any port). Empty: requests carrying an Origin are refused.
    pub allowed_origins: Vec<String>,
    /// Host names the HTTP server answers to besides loopback names.
    pub allowed_hosts: Vec<String>,
    /// Largest HTTP request body, in bytes.
    pub max_body_bytes: usize,
    /// Threads serving HTTP connections, each connection whole on one;
    /// unset: one per core.
    pub http_workers: Option<std::num::NonZeroUsize>,
    /// Microseconds a connection (stdio or HTTP) keeps its thread awake
    /// after each answer, so that a client's next request is read at
    /// once rather than after waking an idle core; at most this much CPU
    /// per answer. 0: off; at most 1000.
    pub busy_poll_us: u64,
    /// Progressive tool disclosure.
    pub disclosure: warden_mcp::DisclosureConfig,
    /// Let clients answer asks through elicitation at all. False: every
    /// agent's asks wait for an operator (`warden approvals`, the admin
    /// API), whatever its `approvals` says. Who answers each agent is
    /// `[agents.NAME] approvals`.
    pub elicitation: bool,
    /// OAuth access tokens beside `tokens` (see docs/oauth.md).
    pub oauth: Option<crate::oauth::OAuthConfig>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            tokens: Vec::new(),
            admin_tokens: Vec::new(),
            approval_timeout_secs: 300,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_body_bytes: 4 << 20,
            http_workers: None,
            busy_poll_us: 50,
            disclosure: warden_mcp::DisclosureConfig::default(),
            elicitation: true,
            oauth: None,
        }
    }
}

/// A bearer token and the agent it acts as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TokenConfig {
    pub agent: String,
    /// The token, inline.
    pub token: Option<String>,
    /// The environment variable holding the token (keeps it out of the file).
    pub token_env: Option<String>,
}

/// An admin token, inline or from an environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SecretConfig {
    pub token: Option<String>,
    pub token_env: Option<String>,
}

/// The secret of a token entry: exactly one of `token` and `token-env`,
/// at least 16 characters.
pub fn resolve_token(
    token: &Option<String>,
    token_env: &Option<String>,
    at: &str,
) -> Result<String, ServerError> {
    let value = match (token, token_env) {
        (Some(t), None) => t.clone(),
        (None, Some(var)) => std::env::var(var)
            .map_err(|_| ServerError::config(at, format!("token-env `{var}` is not set")))?,
        _ => {
            return Err(ServerError::config(
                at,
                "give exactly one of `token` and `token-env`",
            ));
        }
    };
    if value.len() < 16 {
        return Err(ServerError::config(
            at,
            "a token must be at least 16 characters",
        ));
    }
    Ok(value)
}

/// One plugin and the directories its calls may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PluginConfig {
    /// The component file (relative paths resolve against the config file).
    pub path: PathBuf,
    /// Directory grants, as `HOST_DIR[:GUEST_DIR][:ro|rw]` (read-only by default).
    #[serde(default)]
    pub grant_fs: Vec<String>,
    /// Network grants: `host[:port]`, `*.domain`, `https://host`, an IP or
    /// CIDR block, or `insecure:allow-all`. Non-public addresses need a
    /// grant naming the address.
    #[serde(default)]
    pub grant_net: Vec<String>,
    /// Environment grants: `KEY` (the host's value) or `KEY=VALUE`.
    #[serde(default)]
    pub grant_env: Vec<String>,
}

/// Per-call limits; each defaults to the built-in value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LimitsConfig {
    pub timeout_ms: Option<u64>,
    pub memory_mb: Option<u64>,
    pub max_output_bytes: Option<u64>,
    /// Outgoing HTTP: one request's time budget (connect, headers, body).
    pub http_timeout_ms: Option<u64>,
    /// Outgoing HTTP: the largest response body, in bytes.
    pub http_max_response_bytes: Option<u64>,
    /// Outgoing HTTP: redirects one call may follow.
    pub http_max_redirects: Option<u32>,
}

impl Config {
    /// Reads and parses a config file; errors name the file and key path.
    /// Old spellings are accepted with a warning (see
    /// [`Config::deprecations`]).
    pub fn load(path: &Path) -> Result<Config, ServerError> {
        let mut config: Config = read_toml(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        for plugin in &mut config.plugins {
            if plugin.path.is_relative() {
                plugin.path = base.join(&plugin.path);
            }
        }
        config.signers.resolve_paths(base);
        if let Some(oauth) = &mut config.serve.oauth {
            if let Some(file) = &mut oauth.jwks_file
                && file.is_relative()
            {
                *file = base.join(&*file);
            }
            let agents: Vec<&str> = config.agents.keys().map(String::as_str).collect();
            oauth.check(&agents)?;
        }
        for secret in config.secrets.values_mut() {
            if let Some(file) = &mut secret.file
                && file.is_relative()
            {
                *file = base.join(&*file);
            }
        }
        for key in [
            &mut config.state.shared_key,
            &mut config.state.audit_root_key,
            &mut config.toolsmith.key,
        ]
        .into_iter()
        .flatten()
        {
            if key.is_relative() {
                *key = base.join(&*key);
            }
        }
        if config.state.audit_root_key.is_some() && config.state.url.is_none() {
            return Err(ServerError::config(
                path.display().to_string(),
                "`[state] audit-root-key` endorses the audit chains of replicas sharing a \
                 PostgreSQL database; set `[state] url` too (a single host's database holds \
                 one chain)",
            ));
        }
        if config.serve.busy_poll_us > MAX_BUSY_POLL_US {
            return Err(ServerError::config(
                format!("{}: serve.busy-poll-us", path.display()),
                format!(
                    "{} is more than {MAX_BUSY_POLL_US} (1 ms): each answer would keep a core \
                     busy that long; the default is 50, and 0 turns busy polling off",
                    config.serve.busy_poll_us
                ),
            ));
        }
        if let Some(mut legacy) = config.legacy_signers.take() {
            if config.signers != SignersConfig::default() {
                return Err(ServerError::config(
                    path.display().to_string(),
                    "both `[signers]` and its old name `[trust]` are set; keep `[signers]`",
                ));
            }
            legacy.resolve_paths(base);
            config.signers = legacy;
            config.deprecate(format!(
                "{}: `[trust]` is now called `[signers]`; rename the table (the old name is \
                 read for one more release)",
                path.display()
            ));
        }
        let mut renamed = config.policy().renamed_tools();
        for (list, capabilities) in [
            ("auto-grant", &config.capability_grants.auto_grant),
            ("high-risk", &config.capability_grants.high_risk),
        ] {
            for old in capabilities {
                if let Some(new) = warden_policy::renamed_capability(old) {
                    renamed.push(format!(
                        "capability-grants.{list}: `{}` is now `{new}`",
                        old.trim()
                    ));
                }
            }
        }
        for message in renamed {
            config.deprecate(format!(
                "{}: {message} (tools are named `plugin_tool` now; the dotted name is read for \
                 one more release)",
                path.display()
            ));
        }
        Ok(config)
    }

    /// What this configuration spelled the old way, one message each.
    pub fn deprecations(&self) -> &[String] {
        &self.deprecations
    }

    /// Notes an old spelling, and warns about it now.
    pub fn deprecate(&mut self, message: String) {
        tracing::warn!("{message}");
        self.deprecations.push(message);
    }

    pub fn policy(&self) -> PolicyConfig {
        PolicyConfig {
            action_types: self.action_types.clone(),
            rules: self.rules.clone(),
            levels: self.levels.clone(),
            agents: self.agents.clone(),
            protect: self.protect.clone(),
        }
    }
}

/// Reads a TOML file strictly into `T`; errors name the file and the key.
pub(crate) fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ServerError> {
    let text = std::fs::read_to_string(path).map_err(|source| ServerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let de = toml::Deserializer::parse(&text).map_err(|source| ServerError::Toml {
        path: path.to_path_buf(),
        source,
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| ServerError::ConfigKey {
        path: path.to_path_buf(),
        key: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

/// The JSON Schema of `warden.toml`, generated from these types.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Config)).unwrap_or_default()
}
