//! Wiring shared by commands: configuration, runtime options, loading
//! plugins, agents and the gate.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use warden_api::{CallLimits, Grants};
use warden_gate::{Approver, Gate, PolicyEnv};
use warden_policy::{AgentPolicy, Level, Mode, Policy, RuleSet};
use warden_registry::LoadPolicy;
use warden_runtime::{Plugin, Runtime, RuntimeConfig};
use warden_sandbox::SandboxTools;

use crate::config::Config;
use crate::{grant_arg, state_guard};

/// The agent commands act as when none is named.
pub const DEFAULT_AGENT: &str = "cli";

/// Options every command that runs plugins takes.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// A warden.toml: plugins, grants, agents, rules.
    #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
    pub config: Option<PathBuf>,
    /// A plugin component to load (repeatable; adds to the config's).
    #[arg(long = "plugin", value_name = "FILE")]
    pub plugins: Vec<PathBuf>,
    /// Grant a directory to the --plugin components: HOST_DIR[:GUEST_DIR][:ro|rw]
    /// (repeatable; read-only by default; the guest sees HOST_DIR at its own
    /// path unless GUEST_DIR is given).
    #[arg(long = "grant-fs", value_name = "SPEC")]
    pub grant_fs: Vec<String>,
    /// Grant network access to the --plugin components (repeatable):
    /// `host[:port]`, `*.domain`, `https://host`, an IP or CIDR, or
    /// `insecure:allow-all`. Loopback and private addresses need a grant
    /// naming the address.
    #[arg(long = "grant-net", value_name = "PATTERN")]
    pub grant_net: Vec<String>,
    /// Grant an environment variable to the --plugin components
    /// (repeatable): `KEY` passes the host's value, `KEY=VALUE` this value.
    #[arg(long = "grant-env", value_name = "KEY[=VALUE]")]
    pub grant_env: Vec<String>,
    /// A trust file (the keys of `[trust]`: publishers, revocations), added
    /// to the config's trust.
    #[arg(long, value_name = "FILE", env = "WARDEN_TRUST")]
    pub trust: Option<PathBuf>,
    /// Where Warden keeps state; compiled components are cached in its `cache/`.
    #[arg(long, value_name = "DIR", env = "WARDEN_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Compile every plugin from scratch and cache nothing.
    #[arg(long)]
    pub no_cache: bool,
    /// Without `--state-dir` or a config's `state-dir`: use the per-user
    /// state directory instead of `./.warden` (`warden call`, whose grants
    /// often name the working directory).
    #[arg(skip)]
    pub per_user_state: bool,
    /// Wall-clock deadline of a call, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Memory limit of a call, in MiB.
    #[arg(long, value_name = "MIB")]
    pub memory_mb: Option<u64>,
    /// Largest result a call may return, in bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_output_bytes: Option<u64>,
}

/// Options that shape the agent a command acts as.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The agent to act as. Without a config, `cli` is a standard-level
    /// agent in default mode.
    #[arg(long, default_value = DEFAULT_AGENT)]
    pub agent: String,
    /// Override the agent's mode: default, plan, accept-edits, autonomous.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Add an allow rule, e.g. 'fs.write(/src/**)' (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
    /// Add an ask rule (repeatable).
    #[arg(long = "ask", value_name = "RULE")]
    pub ask: Vec<String>,
    /// Add a deny rule (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,
}

pub fn parse_mode(s: &str) -> Result<Mode, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|_| {
        format!("unknown mode `{s}`: expected default, plan, accept-edits or autonomous")
    })
}

/// A loaded configuration plus the command line's additions.
pub struct Host {
    pub config: Config,
    pub runtime: Runtime,
    /// Whose signatures admit a plugin.
    pub policy: LoadPolicy,
    /// Each plugin with the grants its calls hold.
    pub plugins: Vec<(Plugin, Grants)>,
    /// The sandboxed tools and their grants, when `[sandbox]` is configured.
    pub sandbox: Option<(Arc<SandboxTools>, Grants)>,
    pub limits: CallLimits,
}

impl HostArgs {
    pub fn config(&self) -> anyhow::Result<Config> {
        match &self.config {
            Some(path) => Config::load(path),
            None => Ok(Config::default()),
        }
    }

    /// The state directory: the flag (or `WARDEN_STATE_DIR`), else the
    /// config's, else the per-user one when asked for
    /// ([`HostArgs::per_user_state`]), else `.warden`.
    pub fn state_dir(&self, config: &Config) -> PathBuf {
        self.state_dir
            .clone()
            .or_else(|| config.state_dir.clone())
            .or_else(|| {
                self.per_user_state
                    .then(crate::state::user_state_dir)
                    .flatten()
            })
            .unwrap_or_else(|| PathBuf::from(".warden"))
    }

    pub fn limits(&self, config: &Config) -> CallLimits {
        let d = CallLimits::DEFAULT;
        let l = &config.limits;
        CallLimits {
            deadline: Duration::from_millis(
                self.timeout_ms
                    .or(l.timeout_ms)
                    .unwrap_or(d.deadline.as_millis() as u64),
            ),
            memory_bytes: self
                .memory_mb
                .or(l.memory_mb)
                .map_or(d.memory_bytes, |m| m << 20),
            output_bytes: self
                .max_output_bytes
                .or(l.max_output_bytes)
                .unwrap_or(d.output_bytes),
            ..d
        }
    }

    /// The runtime: limits from the config and flags, the compile cache in
    /// the state directory (authenticated with a key derived from the host
    /// key there) unless `--no-cache`.
    pub fn runtime(&self, config: &Config) -> anyhow::Result<Runtime> {
        let limits = self.limits(config);
        let state = self.state_dir(config);
        let mut rc = RuntimeConfig::new((!self.no_cache).then(|| state.join("cache")));
        if !self.no_cache {
            rc = rc.with_cache_key(crate::state::cache_key(&state)?);
        }
        rc.max_memory_bytes = rc.max_memory_bytes.max(limits.memory_bytes);
        rc.http = http_limits(config);
        Ok(Runtime::new(rc)?)
    }

    /// The loading policy: the config's trust plus `--trust`.
    pub fn policy(&self, config: &Config) -> anyhow::Result<LoadPolicy> {
        let mut trust = config.trust.clone();
        if let Some(file) = &self.trust {
            trust = trust.merge(crate::config::TrustConfig::load(file)?);
        }
        crate::trust::policy(&trust)
    }

    /// Loads the config, the runtime and every plugin, each admitted by
    /// the loading policy before any of its code runs (any failure names
    /// the file and stops).
    pub async fn load(&self) -> anyhow::Result<Host> {
        let host = self.load_with(self.config()?).await?;
        if host.plugins.is_empty() && host.sandbox.is_none() {
            anyhow::bail!(
                "no plugins: pass --plugin FILE, list [[plugins]] or configure [sandbox] in a config"
            );
        }
        Ok(host)
    }

    /// [`HostArgs::load`] with a configuration chosen by the caller; no
    /// plugins is not an error here (a server may get them later).
    pub async fn load_with(&self, config: Config) -> anyhow::Result<Host> {
        let limits = self.limits(&config);
        let state = self.state_dir(&config);
        let cli_grants = grants(&self.grant_fs, &self.grant_net, &self.grant_env)?;
        state_guard::check(&state, &cli_grants, "--grant-fs")?;
        let mut wanted: Vec<(PathBuf, Grants)> = Vec::new();
        for (i, p) in config.plugins.iter().enumerate() {
            let at = format!("config: at `plugins[{i}]`");
            let g = grants(&p.grant_fs, &p.grant_net, &p.grant_env).context(at.clone())?;
            state_guard::check(&state, &g, &at)?;
            wanted.push((p.path.clone(), g));
        }
        wanted.extend(self.plugins.iter().map(|p| (p.clone(), cli_grants.clone())));
        let sandbox = match &config.sandbox {
            Some(sc) => {
                let g = grants(&sc.grant_fs, &sc.grant_net, &[]).context("config: at `sandbox`")?;
                state_guard::check(&state, &g, "config: at `sandbox`")?;
                let mut sc = sc.clone();
                sc.instance = crate::state::sandbox_instance(&state)?;
                Some((Arc::new(SandboxTools::new(sc)?), g))
            }
            None => None,
        };
        let policy = self.policy(&config)?;
        let runtime = self.runtime(&config)?;
        let mut plugins = Vec::new();
        for (path, grants) in wanted {
            let plugin = warden_registry::load_file(&runtime, &policy, &path)
                .await?
                .plugin;
            log_gap(&plugin, &grants);
            plugins.push((plugin, grants));
        }
        Ok(Host {
            config,
            runtime,
            policy,
            plugins,
            sandbox,
            limits,
        })
    }
}

/// The grants of one plugin from their command-line or config spellings.
pub fn grants(fs: &[String], net: &[String], env: &[String]) -> anyhow::Result<Grants> {
    Ok(Grants {
        fs: fs
            .iter()
            .map(|g| grant_arg::parse_fs(g))
            .collect::<anyhow::Result<_>>()?,
        net: net
            .iter()
            .map(|g| grant_arg::parse_net(g))
            .collect::<anyhow::Result<_>>()?,
        env: env
            .iter()
            .map(|g| grant_arg::parse_env(g))
            .collect::<anyhow::Result<_>>()?,
    })
}

fn http_limits(config: &Config) -> warden_runtime::HttpLimits {
    let d = warden_runtime::HttpLimits::DEFAULT;
    let l = &config.limits;
    warden_runtime::HttpLimits {
        max_response_bytes: l.http_max_response_bytes.unwrap_or(d.max_response_bytes),
        timeout: l.http_timeout_ms.map_or(d.timeout, Duration::from_millis),
        max_redirects: l.http_max_redirects.unwrap_or(d.max_redirects),
    }
}

/// Logs where a plugin's requested network and environment differ from
/// its grant (keys and patterns only, never values).
fn log_gap(plugin: &Plugin, grants: &Grants) {
    let gap = warden_api::CapabilityGap::between(&plugin.manifest().capabilities, grants);
    if !gap.is_empty() {
        tracing::warn!(
            plugin = plugin.name(),
            network_not_granted = ?gap.network_not_granted.iter().map(ToString::to_string).collect::<Vec<_>>(),
            network_not_requested = ?gap.network_not_requested.iter().map(ToString::to_string).collect::<Vec<_>>(),
            env_not_granted = ?gap.env_not_granted,
            env_not_requested = ?gap.env_not_requested,
            "the plugin's requested capabilities differ from its grant; calls get the intersection"
        );
    }
}

impl Host {
    /// Where agents' paths resolve: the config's, else the first grant's
    /// guest path, else `/workspace`.
    pub fn env(&self) -> PolicyEnv {
        let first_grant = self
            .plugins
            .iter()
            .flat_map(|(_, g)| g.fs.first())
            .chain(self.sandbox.iter().flat_map(|(_, g)| g.fs.first()))
            .next()
            .map(|g| g.guest_path.clone());
        env(&self.config, first_grant)
    }

    /// A gate over the plugins, with the config's agents plus the command
    /// line's agent adjustments.
    pub fn gate(&self, agent: &AgentArgs, approver: Arc<dyn Approver>) -> anyhow::Result<Gate> {
        self.gate_with(agents(&self.config, agent)?, approver)
    }

    /// A gate over the plugins with these agents.
    pub fn gate_with(
        &self,
        agents: Vec<AgentPolicy>,
        approver: Arc<dyn Approver>,
    ) -> anyhow::Result<Gate> {
        self.gate_extended(agents, approver, |b| b)
    }

    /// [`Host::gate_with`], with `extend` adding to the builder (the
    /// durable state hooks of `warden serve`).
    pub fn gate_extended(
        &self,
        agents: Vec<AgentPolicy>,
        approver: Arc<dyn Approver>,
        extend: impl FnOnce(warden_gate::GateBuilder) -> warden_gate::GateBuilder,
    ) -> anyhow::Result<Gate> {
        let mut builder = Gate::builder()
            .limits(self.limits)
            .env(self.env())
            .approver(approver);
        let mut seen: Vec<&Plugin> = Vec::new();
        for (plugin, grants) in &self.plugins {
            if let Some(other) = seen.iter().find(|p| p.name() == plugin.name()) {
                anyhow::bail!(
                    "two plugins are named `{}`: {} and {}; load one of them",
                    plugin.name(),
                    other.path().display(),
                    plugin.path().display()
                );
            }
            seen.push(plugin);
            builder = builder.register(crate::reload::registration(plugin, grants.clone()))?;
        }
        if let Some((tools, grants)) = &self.sandbox {
            builder = builder.backend("sandbox (Docker)", tools.clone(), grants.clone())?;
        }
        for policy in agents {
            builder = builder.agent(policy);
        }
        Ok(extend(builder).build())
    }
}

impl Host {
    /// Connects the sandbox to Docker now and removes orphaned containers;
    /// without an engine the sandboxed tools fail with a clear error and
    /// every other tool works.
    pub async fn start_sandbox(&self) {
        if let Some((tools, _)) = &self.sandbox
            && let Err(e) = tools.start().await
        {
            tracing::warn!(error = %e, "the sandboxed tools are unavailable until Docker answers");
        }
    }

    /// Removes every container this process created.
    pub async fn stop_sandbox(&self) {
        if let Some((tools, _)) = &self.sandbox {
            tools.shutdown().await;
        }
    }
}

pub fn env(config: &Config, first_grant: Option<String>) -> PolicyEnv {
    let workspace = config
        .workspace
        .clone()
        .or(first_grant)
        .unwrap_or_else(|| "/workspace".into());
    PolicyEnv {
        project: config.project.clone().unwrap_or_else(|| workspace.clone()),
        home: config
            .home
            .clone()
            .or_else(|| std::env::var("HOME").ok())
            .unwrap_or_else(|| "/root".into()),
        workspace,
    }
}

/// Every configured agent, plus the default `cli` agent when the config
/// does not define it; the command line's mode and rules apply to the
/// agent acting.
pub fn agents(config: &Config, args: &AgentArgs) -> anyhow::Result<Vec<AgentPolicy>> {
    agents_with(config, args, DEFAULT_AGENT)
}

/// [`agents`] with `builtin` as the agent added at level standard in
/// default mode when the config does not define it.
pub fn agents_with(
    config: &Config,
    args: &AgentArgs,
    builtin: &str,
) -> anyhow::Result<Vec<AgentPolicy>> {
    let mut pc = config.policy();
    if !pc.agents.contains_key(builtin) {
        pc.agents.insert(
            builtin.into(),
            warden_policy::config::AgentConfig {
                level: Level::Standard.name().into(),
                mode: Mode::Default,
                allowed: Vec::new(),
                denied: Vec::new(),
                network_allowlist: Vec::new(),
                constraints: Default::default(),
                rules: Default::default(),
                approvals: None,
            },
        );
    }
    let policy = Policy::from_config(&pc, &warden_api::BUILTIN_ACTION_TYPES)
        .context("the policy in the config")?;
    let extra =
        RuleSet::parse(&args.allow, &args.ask, &args.deny).context("a rule on the command line")?;
    let mut out = Vec::new();
    for p in policy.agents() {
        let mut p = p.clone();
        if p.id == args.agent {
            p.add_rules(&extra);
            if let Some(mode) = args.mode {
                p.set_mode(mode);
            }
        }
        out.push(p);
    }
    if !out.iter().any(|p| p.id == args.agent) {
        anyhow::bail!("agent `{}` is not configured", args.agent);
    }
    Ok(out)
}

pub fn tokio() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
