//! Loading what a host serves: the runtime, every plugin (admitted by its
//! signature before any of its code runs), the sandboxed tools; and the
//! gate builder with all of them registered, which callers finish with
//! their approver and durable hooks.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use warden_api::{CallLimits, Grants};
use warden_gate::{Gate, GateBuilder, PolicyEnv, Registration};
use warden_policy::AgentPolicy;
use warden_registry::AdmissionPolicy;
use warden_runtime::{Plugin, Runtime, RuntimeConfig};
use warden_sandbox::SandboxTools;

use crate::config::Config;
use crate::signers::SignersConfig;
use crate::{ServerError, grant_spec, state, state_guard};

/// Per-call limits given on the command line; each overrides the config.
#[derive(Debug, Clone, Copy, Default)]
pub struct LimitOverrides {
    pub timeout_ms: Option<u64>,
    pub memory_mb: Option<u64>,
    pub max_output_bytes: Option<u64>,
}

/// What to load a host from: a configuration and a command line's
/// additions.
#[derive(Clone)]
pub struct HostOptions {
    pub config: Config,
    /// Where the state lives (see [`crate::state::choose_dir`]).
    pub state_dir: PathBuf,
    /// More plugin components (`--plugin`), holding `plugin_grants`.
    pub plugins: Vec<PathBuf>,
    pub plugin_grants: Grants,
    /// A signers file (`--signers`) added to the config's signers.
    pub signers: Option<PathBuf>,
    /// Compile every plugin from scratch and cache nothing.
    pub no_cache: bool,
    pub limits: LimitOverrides,
    /// The clock everything time-boxed is judged by (grants, approvals,
    /// trust, idle containers). Default: the system clock.
    pub clock: Arc<dyn warden_api::Clock>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("state_dir", &self.state_dir)
            .field("plugins", &self.plugins)
            .field("signers", &self.signers)
            .field("no_cache", &self.no_cache)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl HostOptions {
    /// Options for `config` with nothing added, state in `state_dir`.
    pub fn new(config: Config, state_dir: PathBuf) -> HostOptions {
        HostOptions {
            config,
            state_dir,
            plugins: Vec::new(),
            plugin_grants: Grants::default(),
            signers: None,
            no_cache: false,
            limits: LimitOverrides::default(),
            clock: Arc::new(warden_api::SystemClock),
        }
    }

    /// The per-call limits: the flags, else the config, else the defaults.
    pub fn call_limits(&self) -> CallLimits {
        let d = CallLimits::DEFAULT;
        let l = &self.config.limits;
        CallLimits {
            deadline: self
                .limits
                .timeout_ms
                .or(l.timeout_ms)
                .map_or(d.deadline, Duration::from_millis),
            memory_bytes: self
                .limits
                .memory_mb
                .or(l.memory_mb)
                .map_or(d.memory_bytes, |m| m << 20),
            output_bytes: self
                .limits
                .max_output_bytes
                .or(l.max_output_bytes)
                .unwrap_or(d.output_bytes),
            ..d
        }
    }

    /// The admission policy: the config's signers plus `--signers`.
    pub fn admission(&self) -> Result<AdmissionPolicy, ServerError> {
        let mut signers = self.config.signers.clone();
        if let Some(file) = &self.signers {
            signers = signers.merge(SignersConfig::load(file)?);
        }
        signers.admission()
    }

    /// The runtime: limits from the config and flags, the compile cache in
    /// the state directory (authenticated with a key derived from the host
    /// key there) unless `no_cache`.
    pub fn runtime(&self) -> Result<Runtime, ServerError> {
        let limits = self.call_limits();
        let mut rc = RuntimeConfig::new((!self.no_cache).then(|| self.state_dir.join("cache")));
        if !self.no_cache {
            rc = rc.with_cache_key(state::cache_key(&self.state_dir)?);
        }
        rc.max_memory_bytes = rc.max_memory_bytes.max(limits.memory_bytes);
        rc.http = http_limits(&self.config);
        Ok(Runtime::new(rc)?)
    }
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

/// A loaded host: its plugins and sandboxed tools, not yet behind a gate.
pub struct Loaded {
    pub config: Config,
    /// The options' clock.
    pub clock: Arc<dyn warden_api::Clock>,
    pub state_dir: PathBuf,
    pub runtime: Runtime,
    /// Whose signatures admit a plugin.
    pub admission: AdmissionPolicy,
    /// Each plugin with the grants its calls hold.
    pub plugins: Vec<(Plugin, Grants)>,
    /// The plugin files the options name, with their grants, in order:
    /// what [`Loaded::load_plugins`] loads into `plugins`.
    pub wanted: Vec<(PathBuf, Grants)>,
    /// The sandboxed tools and their grants, when `[sandbox]` is configured.
    pub sandbox: Option<(Arc<SandboxTools>, Grants)>,
    pub limits: CallLimits,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("state_dir", &self.state_dir)
            .field(
                "plugins",
                &self
                    .plugins
                    .iter()
                    .map(|(p, _)| p.name())
                    .collect::<Vec<_>>(),
            )
            .field("sandbox", &self.sandbox.is_some())
            .finish_non_exhaustive()
    }
}

impl Loaded {
    /// Loads the runtime and every plugin, each admitted by its signature
    /// before any of its code runs; no directory grant may reach the state
    /// directory. Any failure names the file or key and stops.
    pub async fn load(options: &HostOptions) -> Result<Loaded, ServerError> {
        let mut loaded = Loaded::prepare(options)?;
        loaded.load_plugins().await?;
        Ok(loaded)
    }

    /// Everything [`Loaded::load`] does but loading the plugins: the
    /// configuration checked, every grant parsed and kept off the state
    /// directory, the signers, the runtime and the sandbox.
    pub fn prepare(options: &HostOptions) -> Result<Loaded, ServerError> {
        let config = options.config.clone();
        let state = &options.state_dir;
        state_guard::check(state, &options.plugin_grants, "--grant-fs")?;
        let mut wanted: Vec<(PathBuf, Grants)> = Vec::new();
        for (i, p) in config.plugins.iter().enumerate() {
            let at = format!("config: at `plugins[{i}]`");
            let g = grant_spec::grants(&at, &p.grant_fs, &p.grant_net, &p.grant_env)?;
            state_guard::check(state, &g, &at)?;
            wanted.push((p.path.clone(), g));
        }
        wanted.extend(
            options
                .plugins
                .iter()
                .map(|p| (p.clone(), options.plugin_grants.clone())),
        );
        let sandbox = match &config.sandbox {
            Some(sc) => {
                let at = "config: at `sandbox`";
                let g = grant_spec::grants(at, &sc.grant_fs, &sc.grant_net, &[])?;
                state_guard::check(state, &g, at)?;
                let mut sc = sc.clone();
                sc.instance = state::sandbox_instance(state)?;
                sc.deployment = state::sandbox_deployment(state, &config.state)?;
                let tools = SandboxTools::new(sc)?.with_clock(options.clock.clone());
                Some((Arc::new(tools), g))
            }
            None => None,
        };
        Ok(Loaded {
            config,
            clock: options.clock.clone(),
            state_dir: state.clone(),
            runtime: options.runtime()?,
            admission: options.admission()?,
            plugins: Vec::new(),
            wanted,
            sandbox,
            limits: options.call_limits(),
        })
    }

    /// Loads every wanted plugin (concurrently; each admitted by its
    /// signature first) into `plugins`, in the order they are named.
    pub async fn load_plugins(&mut self) -> Result<(), ServerError> {
        let paths = self.wanted.iter().map(|(path, _)| path.clone()).collect();
        let candidates = warden_registry::load_files(&self.runtime, &self.admission, paths).await;
        let mut plugins = Vec::new();
        for ((_, grants), candidate) in self.wanted.iter().zip(candidates) {
            let plugin = candidate?.plugin;
            log_gap(plugin.manifest(), grants);
            plugins.push((plugin, grants.clone()));
        }
        self.plugins = plugins;
        Ok(())
    }

    /// True when there is nothing to serve.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.sandbox.is_none()
    }

    /// Where agents' paths resolve: the config's, else the first grant's
    /// guest path, else `/workspace`.
    pub fn env(&self) -> PolicyEnv {
        self.env_with(&[])
    }

    /// [`Loaded::env`] counting `more` grants after the plugins' (those of
    /// installed plugins not loaded yet).
    pub fn env_with(&self, more: &[Grants]) -> PolicyEnv {
        let first_grant = self
            .wanted
            .iter()
            .map(|(_, g)| g)
            .chain(more)
            .flat_map(|g| g.fs.first())
            .chain(self.sandbox.iter().flat_map(|(_, g)| g.fs.first()))
            .next()
            .map(|g| g.guest_path.clone());
        crate::agents::env(&self.config, first_grant)
    }

    /// A gate builder with every tool registered (two plugins of one name
    /// are refused, naming both files), `agents`, the limits and the
    /// agents' environment; the caller adds its approver and hooks.
    pub fn gate_builder(&self, agents: Vec<AgentPolicy>) -> Result<GateBuilder, ServerError> {
        let mut builder = Gate::builder().limits(self.limits).env(self.env());
        for (plugin, grants) in &self.plugins {
            builder = builder.register(registration(plugin, grants.clone()))?;
        }
        if let Some((tools, grants)) = &self.sandbox {
            builder = builder.backend("sandbox (Docker)", tools.clone(), grants.clone())?;
        }
        for policy in agents {
            builder = builder.agent(policy);
        }
        Ok(builder)
    }

    /// A gate for one-off calls (`warden call`): audited in the signed
    /// chain of the state directory, consulting its capability grants, and
    /// letting progressive trust learn from the outcome (write
    /// [`Gate::flush_trust`] before exiting), with `approver` asking.
    pub fn call_gate(
        &self,
        overrides: &crate::AgentOverrides,
        builtin: &str,
        approver: Arc<dyn warden_api::Approver>,
    ) -> Result<Gate, ServerError> {
        let config = &self.config;
        let store = state::open(&self.state_dir, &config.state)?;
        let clock = self.clock.clone();
        let trust = warden_gate::TrustKeeper::load(
            config.progressive_trust.clone(),
            Arc::new(crate::StoreTrust(store.clone())),
            clock.clone(),
            std::slice::from_ref(&overrides.agent),
        )
        .map_err(|source| ServerError::Journal {
            what: "loading progressive trust from the state database".into(),
            source,
        })?;
        let agents = crate::agents(config, overrides, builtin)?;
        Ok(self
            .gate_builder(agents)?
            .approver(approver)
            .journal(Arc::new(warden_store::Hooks(store.clone())))
            .grants(Arc::new(crate::StoreGrants::new(store, clock.clone())))
            .clock(clock)
            .trust(Arc::new(trust))
            .build())
    }

    /// Connects the sandbox to Docker now and removes orphaned containers;
    /// without an engine the sandboxed tools fail with a clear error and
    /// every other tool works.
    pub async fn start_sandbox(&self) {
        if let Some((tools, _)) = &self.sandbox
            && let Err(e) = tools.connect().await
        {
            tracing::warn!(error = %e, "the sandboxed tools are unavailable until the sandbox backend answers");
        }
    }

    /// Removes every container this process created.
    pub async fn stop_sandbox(&self) {
        if let Some((tools, _)) = &self.sandbox {
            tools.shutdown().await;
        }
    }
}

/// The gate registration of a loaded plugin: owned by its name.
pub fn registration(plugin: &Plugin, grants: Grants) -> Registration {
    registration_of(
        plugin.manifest(),
        plugin.path(),
        Arc::new(plugin.clone()),
        grants,
    )
}

/// The gate's entry for the plugin of `manifest`, loaded from `path`,
/// served by `backend`.
pub fn registration_of(
    manifest: &warden_api::Manifest,
    path: &Path,
    backend: Arc<dyn warden_api::Backend>,
    grants: Grants,
) -> Registration {
    Registration {
        owner: manifest.plugin.name.clone(),
        source: format!(
            "{} {} ({})",
            manifest.plugin.name,
            manifest.plugin.version,
            path.display()
        ),
        backend,
        grants,
        ceiling: None,
        generated: false,
    }
}

/// Logs where a plugin's requested network and environment differ from
/// its grant (keys and patterns only, never values).
pub(crate) fn log_gap(manifest: &warden_api::Manifest, grants: &Grants) {
    let gap = warden_api::CapabilityGap::between(&manifest.capabilities, grants);
    if !gap.is_empty() {
        tracing::warn!(
            plugin = %manifest.plugin.name,
            network_not_granted = ?gap.network_not_granted.iter().map(ToString::to_string).collect::<Vec<_>>(),
            network_not_requested = ?gap.network_not_requested.iter().map(ToString::to_string).collect::<Vec<_>>(),
            env_not_granted = ?gap.env_not_granted,
            env_not_requested = ?gap.env_not_requested,
            "the plugin's requested capabilities differ from its grant; calls get the intersection"
        );
    }
}
