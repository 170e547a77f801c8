//! `warden serve`: the MCP server, over stdio or Streamable HTTP, with the
//! admin API on a socket in the state directory.
//!
//! Configuration: `--config FILE`, else `./warden.toml` when present (and
//! it does not widen trust: see `found_config`), else
//! embedded defaults — the bundled plugins (from `--plugin-dir`,
//! `WARDEN_PLUGIN_DIR`, a development checkout's
//! `plugins/target/wasm32-wasip2/release`, or `plugins/` beside the
//! binary), state under `./.warden`, `./workspace` granted read-write at
//! `/workspace`, and agent `default` at level standard in default mode.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;
use warden_api::ToolHost;
use warden_gate::ApprovalBook;
use warden_mcp::{HttpOptions, Server, ServerOptions};

use super::setup::{self, AgentArgs, HostArgs};
use crate::Outcome;
use crate::config::{
    Config, GrantsConfig, PluginConfig, PublisherConfig, TrustConfig, resolve_token,
};
use crate::reload::{LivePlugins, NamedGrants};

/// The development key's public half, written beside the bundled plugins
/// by `cargo xtask plugins`, which signs them with its secret half.
pub const DEV_KEY_FILE: &str = "warden-dev.pub";

/// The agent `warden serve` acts as when none is named.
pub const SERVE_AGENT: &str = "default";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve one MCP session on stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:7878) under `/mcp`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// The agent of the stdio session, and of HTTP requests when no tokens
    /// are configured (loopback only).
    #[arg(long, default_value = SERVE_AGENT)]
    pub agent: String,
    /// Override that agent's mode: default, plan, accept-edits, autonomous.
    #[arg(long, value_parser = setup::parse_mode)]
    pub mode: Option<warden_policy::Mode>,
    /// Where the bundled plugins are (used without a config).
    #[arg(long, value_name = "DIR", env = "WARDEN_PLUGIN_DIR")]
    pub plugin_dir: Option<PathBuf>,
    /// Watch DIR for plugin components (`*.wasm` with `.sig` beside):
    /// new and changed ones load, removed ones unload, without a restart.
    #[arg(long, value_name = "DIR")]
    pub watch: Option<PathBuf>,
    /// How often --watch looks, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub watch_interval_ms: u64,
    #[command(flatten)]
    pub host: HostArgs,
}

/// The bundled plugins' directory.
fn bundled_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir.to_path_buf());
    }
    let checkout = PathBuf::from("plugins/target/wasm32-wasip2/release");
    if checkout.is_dir() {
        return Ok(checkout);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("plugins")));
    match beside {
        Some(dir) if dir.is_dir() => Ok(dir),
        _ => anyhow::bail!(
            "no bundled plugins found: build them with `cargo xtask plugins`, or pass --plugin-dir DIR, --plugin FILE or --config FILE"
        ),
    }
}

/// The embedded default configuration.
fn defaults(args: &ServeArgs) -> anyhow::Result<Config> {
    let dir = bundled_dir(args.plugin_dir.as_deref())?;
    let workspace = PathBuf::from("workspace");
    std::fs::create_dir_all(&workspace).context("creating ./workspace")?;
    let workspace = workspace.canonicalize().context("resolving ./workspace")?;
    let workspace_grant = format!("{}:/workspace:rw", workspace.display());
    let mut plugins = Vec::new();
    if args.host.plugins.is_empty() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
            .collect();
        files.sort();
        if files.is_empty() {
            anyhow::bail!("{} holds no .wasm plugins", dir.display());
        }
        for path in files {
            plugins.push(PluginConfig {
                path,
                grant_fs: vec![workspace_grant.clone()],
                // No network or environment by default: grant them in a config.
                grant_net: Vec::new(),
                grant_env: Vec::new(),
            });
        }
    }
    // The demo trusts the development key that signed the bundled plugins,
    // by name; a deployment lists its own publishers in `[trust]`.
    let dev_key = dir.join(DEV_KEY_FILE);
    let mut trust = TrustConfig::default();
    if dev_key.is_file() {
        tracing::warn!(
            key = %dev_key.display(),
            "embedded defaults: trusting the development signing key of the bundled plugins; \
             list your own publishers in a config's [trust] for production"
        );
        trust.publishers.push(PublisherConfig {
            name: "warden-dev".into(),
            key: dev_key,
        });
    }
    let mut plugin_grants = std::collections::BTreeMap::new();
    plugin_grants.insert(
        "*".to_owned(),
        GrantsConfig {
            grant_fs: vec![workspace_grant],
            ..GrantsConfig::default()
        },
    );
    Ok(Config {
        workspace: Some("/workspace".into()),
        plugins,
        trust,
        plugin_grants,
        ..Config::default()
    })
}

fn choose_config(args: &ServeArgs) -> anyhow::Result<Config> {
    if args.host.config.is_some() {
        return args.host.config();
    }
    let local = Path::new("warden.toml");
    if local.is_file() {
        let config = Config::load(local)?;
        crate::found_config::check(&config, local)?;
        return Ok(config);
    }
    defaults(args)
}

async fn shutdown_signal(token: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    token.cancel();
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    token.cancel();
}

/// `[plugin-grants]` as grants, none reaching the state directory `state`.
fn named_grants(config: &Config, state: &Path) -> anyhow::Result<NamedGrants> {
    let mut named = NamedGrants::default();
    for (name, g) in &config.plugin_grants {
        let at = format!("config: at `plugin-grants.{name}`");
        let grants = setup::grants(&g.grant_fs, &g.grant_net, &g.grant_env).context(at.clone())?;
        crate::state_guard::check(state, &grants, &at)?;
        if name == "*" {
            named.fallback = Some(grants);
        } else {
            named.by_name.insert(name.clone(), grants);
        }
    }
    Ok(named)
}

/// Who answers each configured agent's asks, where the config says.
fn approval_channels(
    config: &Config,
) -> std::collections::BTreeMap<String, warden_api::ApprovalChannel> {
    use warden_policy::config::Approvals;
    config
        .agents
        .iter()
        .filter_map(|(id, a)| {
            let channel = match a.approvals? {
                Approvals::Client => warden_api::ApprovalChannel::Client,
                Approvals::Operator => warden_api::ApprovalChannel::Operator,
            };
            Some((id.clone(), channel))
        })
        .collect()
}

pub fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    setup::tokio()?.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> anyhow::Result<Outcome> {
    let config = choose_config(&args)?;
    let state = args.host.state_dir(&config);
    std::fs::create_dir_all(&state)
        .with_context(|| format!("creating the state directory {}", state.display()))?;
    config
        .progressive_trust
        .validate()
        .map_err(anyhow::Error::msg)?;
    let store = crate::state::open_with(&state, config.state.audit_args, config.state.durability)?;
    let named = named_grants(&config, &state)?;
    let mut host = args.host.load_with(config).await?;
    let fixed = host
        .plugins
        .iter()
        .map(|(p, _)| p.name().to_owned())
        .collect();
    let registry =
        warden_registry::Registry::open(&state, host.policy.clone(), host.runtime.clone())?;
    for candidate in registry.load_installed().await? {
        tracing::info!(
            plugin = candidate.name(), digest = %candidate.admission.digest,
            origin = ?candidate.plugin.origin(), "installed plugin loaded"
        );
        let grants = named.of(candidate.name());
        host.plugins.push((candidate.plugin, grants));
    }
    if host.policy.insecure_allow_unsigned {
        #[expect(
            clippy::print_stderr,
            reason = "a warning the operator must see at every start"
        )]
        {
            eprintln!("warden: WARNING: insecure-allow-unsigned is set; unsigned plugins load");
        }
    }
    host.start_sandbox().await;
    let serve = &host.config.serve;
    let book = Arc::new(
        ApprovalBook::durable(
            Duration::from_secs(serve.approval_timeout_secs.max(1)),
            store.clone(),
        )
        .context("loading approvals from the state database")?,
    );
    let agent_args = AgentArgs {
        agent: args.agent.clone(),
        mode: args.mode,
        allow: Vec::new(),
        ask: Vec::new(),
        deny: Vec::new(),
    };
    let agents = setup::agents_with(&host.config, &agent_args, SERVE_AGENT)?;
    let host_key = crate::state::key(&state)?;
    let fingerprint = crate::state::fingerprint_key(&host_key);
    let agent_ids: Vec<String> = agents.iter().map(|a| a.id.clone()).collect();
    let journal = Arc::new(crate::progressive::TrustingJournal::new(
        store.clone(),
        host.config.progressive_trust.clone(),
    ));
    let gate = host.gate_extended(agents, book.clone(), |builder| {
        builder
            .journal(journal.clone())
            .grants(Arc::new(crate::state::StoreGrants::new(store.clone())))
            .fingerprint_key(fingerprint)
    })?;
    journal.attach(gate.clone(), &agent_ids)?;
    for stored in store.rules()? {
        if let Err(e) = gate.add_allow_rule(&stored.agent, &stored.rule) {
            tracing::warn!(agent = %stored.agent, rule = %stored.rule, error = %e, "a stored rule no longer applies");
        }
    }
    let tools = gate.list_tools(&args.agent).len();
    let desk = crate::desk::Desk {
        store: store.clone(),
        book: book.clone(),
        gate: gate.clone(),
        bounds: host.config.capability_grants.bounds()?,
        fingerprint_key: fingerprint,
    };
    let server = Server::new(
        Arc::new(gate.clone()),
        book.clone(),
        ServerOptions {
            name: "warden".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            disclosure: serve.disclosure,
            elicitation: serve.elicitation,
            approvals: approval_channels(&host.config),
            request_state_key: crate::state::request_state_key(&host_key),
        },
    )?;
    server.set_capability_desk(Arc::new(desk));
    let live = Arc::new(LivePlugins::new(
        gate.clone(),
        registry,
        server.clone(),
        named,
        fixed,
        store.clone(),
    ));
    server.set_plugin_admin(live.clone());
    let shutdown = CancellationToken::new();
    tokio::spawn(shutdown_signal(shutdown.clone()));
    if let Some(dir) = &args.watch {
        if !dir.is_dir() {
            anyhow::bail!("--watch {}: not a directory", dir.display());
        }
        tokio::spawn(live.clone().watch(
            dir.clone(),
            Duration::from_millis(args.watch_interval_ms.max(10)),
            shutdown.clone(),
        ));
    }
    let socket = state.join("admin.sock");
    let admin = {
        let server = server.clone();
        let shutdown = shutdown.clone();
        let socket = socket.clone();
        tokio::spawn(async move {
            let result = warden_mcp::serve_admin_socket(&socket, server, shutdown).await;
            if let Err(e) = &result {
                tracing::warn!(error = %e, "the admin API is not available; `warden approvals` cannot reach this server");
            }
            result
        })
    };
    tracing::info!(agent = %args.agent, tools, admin = %socket.display(), "serving");
    let result = match args.http {
        Some(addr) => {
            let tokens = serve
                .tokens
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    resolve_token(&t.token, &t.token_env, &format!("serve.tokens[{i}]"))
                        .map(|secret| (secret, t.agent.clone()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let admin_tokens = serve
                .admin_tokens
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    resolve_token(&t.token, &t.token_env, &format!("serve.admin-tokens[{i}]"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let open_agent = tokens.is_empty().then(|| args.agent.clone());
            let options = HttpOptions {
                addr,
                tokens,
                admin_tokens,
                open_agent,
                allowed_origins: serve.allowed_origins.clone(),
                allowed_hosts: serve.allowed_hosts.clone(),
                max_body_bytes: serve.max_body_bytes,
            };
            warden_mcp::serve_http(server, options, shutdown.clone(), |bound| {
                #[expect(clippy::print_stderr, reason = "tells the operator where to connect")]
                {
                    eprintln!(
                        "warden: serving MCP at http://{bound}/mcp (admin socket {})",
                        socket.display()
                    );
                }
            })
            .await
            .context("the HTTP server")
        }
        None => warden_mcp::serve_stdio(server, args.agent.clone())
            .await
            .context("the stdio session"),
    };
    shutdown.cancel();
    let _ = admin.await;
    host.stop_sandbox().await;
    result.map(|()| Outcome::Ok)
}
