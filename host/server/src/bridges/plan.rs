//! From `[[bridge]]` entries to bridges: every value checked, with the
//! entry's key path in the error, before anything starts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use warden_api::{ActionType, Category, check_env_key};
use warden_mcp::bridge::{
    BridgeSettings, Connector, HostProcess, HttpConnector, HttpUpstream, SessionScope, StderrLog,
};
use warden_policy::Verdict;

use super::config::{
    BridgeConfig, BridgeRuntime, BridgeTransport, DefaultDecision, ScopeConfig, SecretSource,
    parse_duration,
};
use super::secrets;
use crate::ServerError;

/// How many bytes of a server's stderr are kept.
const STDERR_BYTES: usize = 64 * 1024;

/// A bridge, ready to start.
pub struct Planned {
    pub settings: BridgeSettings,
    pub connector: Arc<dyn Connector>,
    pub stderr: Arc<StderrLog>,
    /// The gate's ceiling for tools no rule names.
    pub ceiling: Option<Verdict>,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("name", &self.settings.name)
            .finish_non_exhaustive()
    }
}

/// Every bridge of the configuration; names must be unique. `instance`
/// names this Warden installation on the labels of docker-runtime
/// containers (see `warden_sandbox::reconcile`).
pub fn plan_all(
    bridges: &[BridgeConfig],
    secrets: &BTreeMap<String, SecretSource>,
    instance: &str,
) -> Result<Vec<Planned>, ServerError> {
    let mut names = BTreeSet::new();
    let mut planned = Vec::new();
    for (i, bridge) in bridges.iter().enumerate() {
        let at = format!("bridge[{i}] ({})", bridge.name);
        if !names.insert(bridge.name.clone()) {
            return Err(ServerError::config(
                at,
                format!(
                    "a second bridge is named `{}`; names are namespaces and must be unique",
                    bridge.name
                ),
            ));
        }
        planned.push(plan(bridge, secrets, instance, &at)?);
    }
    Ok(planned)
}

/// Keys that belong to the other transport are refused first, naming the
/// key, before anything they name is resolved.
fn transport_keys(bridge: &BridgeConfig, at: &str) -> Result<(), ServerError> {
    let err = |key: &str, message: String| ServerError::config(format!("{at}.{key}"), message);
    if bridge.transport == BridgeTransport::Stdio {
        let http_only = [
            ("url", bridge.url.is_some()),
            ("auth", bridge.auth.is_some()),
            ("insecure-http", bridge.insecure_http),
        ];
        if let Some(key) = http_only.iter().find_map(|(key, set)| set.then_some(*key)) {
            return Err(err(
                key,
                format!(
                    "`{key}` is for `transport = \"http\"`; a stdio server is started from `command`"
                ),
            ));
        }
        return Ok(());
    }
    let stdio_only = [
        ("command", !bridge.command.is_empty()),
        ("runtime", bridge.runtime.is_some()),
        ("image", bridge.image.is_some()),
        ("env", !bridge.env.is_empty()),
        ("secrets", !bridge.secrets.is_empty()),
        ("insecure-host-process", bridge.insecure_host_process),
    ];
    if let Some((key, _)) = stdio_only.iter().find(|(_, set)| *set) {
        return Err(err(
            key,
            format!(
                "`{key}` is for stdio servers Warden starts; an `http` server runs elsewhere \
                 (give it a token with `auth = {{ bearer = \"NAME\" }}`)"
            ),
        ));
    }
    Ok(())
}

/// An `http` bridge's endpoint, checked: a URL and nothing of a process.
fn http_upstream(
    bridge: &BridgeConfig,
    secret_sources: &BTreeMap<String, SecretSource>,
    settings: &mut BridgeSettings,
    at: &str,
) -> Result<HttpUpstream, ServerError> {
    let err = |key: &str, message: String| ServerError::config(format!("{at}.{key}"), message);
    let url = bridge.url.as_deref().ok_or_else(|| {
        err(
            "url",
            "an `http` bridge needs the server's endpoint, e.g. `url = \"https://mcp.example.com/mcp\"`"
                .into(),
        )
    })?;
    let allow = bridge
        .network
        .patterns()
        .map_err(|(j, e)| err(&format!("network.allow[{j}]"), e))?;
    let bearer = match &bridge.auth {
        Some(auth) => {
            let value =
                secrets::resolve(secret_sources, &auth.bearer, &format!("{at}.auth.bearer"))?;
            settings.secrets.push((auth.bearer.clone(), value.clone()));
            Some(value)
        }
        None => None,
    };
    if bridge.insecure_http {
        tracing::warn!(bridge = %bridge.name, "INSECURE: a bridged server may be reached over plain HTTP");
    }
    HttpUpstream::new(url, &allow, bridge.insecure_http, bearer).map_err(|e| err("url", e))
}

fn valid_namespace(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && name.len() <= 12
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9'))
}

fn plan(
    bridge: &BridgeConfig,
    secret_sources: &BTreeMap<String, SecretSource>,
    instance: &str,
    at: &str,
) -> Result<Planned, ServerError> {
    let err = |key: &str, message: String| ServerError::config(format!("{at}.{key}"), message);
    if !valid_namespace(&bridge.name) {
        return Err(err(
            "name",
            format!(
                "`{}` is not a namespace: a lower-case letter, then up to 11 lower-case letters or digits",
                bridge.name
            ),
        ));
    }
    transport_keys(bridge, at)?;
    let category: Category = bridge
        .category
        .parse()
        .map_err(|e| err("category", format!("{e}")))?;
    let action = |text: &str, key: &str| -> Result<ActionType, ServerError> {
        text.parse().map_err(|e| err(key, format!("{e}")))
    };
    let action_type = action(
        bridge
            .action_type
            .as_deref()
            .unwrap_or("external_data:request"),
        "action-type",
    )?;
    let mut actions = BTreeMap::new();
    for (tool, text) in &bridge.actions {
        actions.insert(tool.clone(), action(text, &format!("actions.{tool}"))?);
    }
    for (tool, template) in &bridge.specifiers {
        if template.trim().is_empty() {
            return Err(err(&format!("specifiers.{tool}"), "is empty".into()));
        }
    }
    let duration = |value: &Option<String>, key: &str, default: std::time::Duration| {
        value
            .as_deref()
            .map_or(Ok(default), parse_duration)
            .map_err(|e| err(key, e))
    };
    let mut settings = BridgeSettings::new(&bridge.name, category, action_type);
    settings.actions = actions;
    settings.specifiers = bridge.specifiers.clone();
    settings.read_only = bridge.read_only.clone();
    settings.allow = bridge.tools.allow.clone();
    settings.deny = bridge.tools.deny.clone();
    settings.max_tools = bridge.max_tools.unwrap_or(settings.max_tools);
    settings.max_schema_bytes = bridge.max_schema_bytes.unwrap_or(settings.max_schema_bytes);
    settings.max_result_bytes = bridge.max_result_bytes.unwrap_or(settings.max_result_bytes);
    settings.init_timeout = duration(&bridge.init_timeout, "init-timeout", settings.init_timeout)?;
    settings.call_timeout = duration(&bridge.call_timeout, "call-timeout", settings.call_timeout)?;
    settings.idle_shutdown = duration(
        &bridge.idle_shutdown,
        "idle-shutdown",
        settings.idle_shutdown,
    )?;
    settings.session_scope = match bridge.session_scope {
        ScopeConfig::PerAgent => SessionScope::PerAgent,
        ScopeConfig::Shared => SessionScope::Shared,
    };
    settings.pin = bridge.pin;
    for (tool, digest) in &bridge.pins {
        let hex = digest.strip_prefix("sha256:").unwrap_or_default();
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(err(
                &format!("pins.{tool}"),
                format!("`{digest}` is not a digest (`sha256:` and 64 hex digits)"),
            ));
        }
    }
    settings.pins = bridge.pins.clone();
    settings.allow_elicitation = bridge.allow_elicitation;
    let mut env: Vec<(String, String)> = Vec::new();
    for (key, value) in &bridge.env {
        check_env_key(key).map_err(|e| err(&format!("env.{key}"), e.to_string()))?;
        env.push((key.clone(), value.clone()));
    }
    for (key, name) in &bridge.secrets {
        check_env_key(key).map_err(|e| err(&format!("secrets.{key}"), e.to_string()))?;
        if bridge.env.contains_key(key) {
            return Err(err(
                &format!("secrets.{key}"),
                format!("`{key}` is also in `env`; give it once"),
            ));
        }
        let value = secrets::resolve(secret_sources, name, &format!("{at}.secrets.{key}"))?;
        settings.secrets.push((name.clone(), value.clone()));
        env.push((key.clone(), value));
    }
    let stderr = Arc::new(StderrLog::new(STDERR_BYTES, settings.secrets.clone()));
    let connector: Arc<dyn Connector> = match bridge.transport {
        BridgeTransport::Http => {
            let upstream = http_upstream(bridge, secret_sources, &mut settings, at)?;
            Arc::new(HttpConnector::new(upstream, settings.max_message()))
        }
        BridgeTransport::Stdio => {
            if bridge.command.is_empty() || bridge.command[0].trim().is_empty() {
                return Err(err(
                    "command",
                    "a stdio bridge needs its command: a program and its arguments, as a list"
                        .into(),
                ));
            }
            match bridge.runtime.unwrap_or(BridgeRuntime::Docker) {
                BridgeRuntime::Host => {
                    if !bridge.insecure_host_process {
                        return Err(err(
                            "runtime",
                            "`host` runs the server as a process of this machine, with its files and network; \
                             set `insecure-host-process = true` to allow it, or use `docker`"
                                .into(),
                        ));
                    }
                    tracing::warn!(bridge = %bridge.name, "INSECURE: a bridged server runs as a host process");
                    Arc::new(HostProcess::new(
                        bridge.command.clone(),
                        env,
                        stderr.clone(),
                    ))
                }
                BridgeRuntime::Docker => Arc::new(super::docker::DockerConnector::new(
                    bridge,
                    env,
                    stderr.clone(),
                    instance,
                    at,
                )?),
            }
        }
    };
    let ceiling = match bridge.default_decision {
        DefaultDecision::Allow => None,
        DefaultDecision::Ask => Some(Verdict::Ask),
        DefaultDecision::Deny => Some(Verdict::Deny),
    };
    Ok(Planned {
        settings,
        connector,
        stderr,
        ceiling,
    })
}
