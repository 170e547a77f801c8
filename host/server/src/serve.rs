//! The running host: everything `warden serve` assembles — the state
//! database and its durable hooks (journal, approvals, capability grants,
//! progressive trust), the gate, the MCP face, hot reload, the admin API
//! on a socket in the state directory, and the periodic trust tick — and
//! its transports. Integration tests start the same [`Host`] in process.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use warden_api::{ApprovalChannel, ToolHost};
use warden_gate::{ApprovalBook, Gate, TrustKeeper};
use warden_mcp::{HttpOptions, ServerOptions};
use warden_policy::Mode;
use warden_store::{Hooks, Store};

use crate::agents::{AgentOverrides, agents};
use crate::config::{Config, resolve_token};
use crate::first_load::FirstLoad;
use crate::host::{HostOptions, Loaded};
use crate::reload::{LivePlugins, NamedGrants};
use crate::sources::{StoreGrants, StoreTrust};
use crate::{ServerError, grant_spec, state, state_guard};

/// The agent `warden serve` acts as when none is named.
pub const SERVE_AGENT: &str = "default";

/// How often progressive trust ticks (re-verification, decay, and
/// counters written to the store) unless told otherwise.
pub const TRUST_TICK: Duration = Duration::from_secs(10);

/// What to serve, beyond the host's options.
#[derive(Clone)]
pub struct ServeOptions {
    pub host: HostOptions,
    /// The agent of the stdio session, and of HTTP requests when no tokens
    /// are configured (loopback only).
    pub agent: String,
    /// Overrides that agent's mode.
    pub mode: Option<Mode>,
    /// A directory whose components load, change and unload while serving,
    /// polled this often.
    pub watch: Option<(PathBuf, Duration)>,
    /// How often progressive trust ticks.
    pub trust_tick: Duration,
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("host", &self.host)
            .field("agent", &self.agent)
            .field("mode", &self.mode)
            .field("watch", &self.watch)
            .field("trust_tick", &self.trust_tick)
            .finish_non_exhaustive()
    }
}

impl ServeOptions {
    /// Serving `host` as agent [`SERVE_AGENT`], system clock, no watch.
    pub fn new(host: HostOptions) -> ServeOptions {
        ServeOptions {
            host,
            agent: SERVE_AGENT.to_owned(),
            mode: None,
            watch: None,
            trust_tick: TRUST_TICK,
        }
    }
}

/// A running host. Stop it with [`Host::shutdown`].
pub struct Host {
    loaded: Loaded,
    /// The plugins' load, which `tools/list` and `tools/call` wait for.
    startup: warden_mcp::Startup,
    /// Why that load failed, for the transport to stop with.
    failure: Arc<std::sync::Mutex<Option<ServerError>>>,
    gate: Gate,
    book: Arc<ApprovalBook>,
    store: Arc<dyn Store>,
    mcp: warden_mcp::Server,
    live: Arc<LivePlugins>,
    agent: String,
    socket: PathBuf,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("loaded", &self.loaded)
            .field("agent", &self.agent)
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

/// `[plugin-grants]` as grants, none reaching the state directory `state`.
fn named_grants(config: &Config, state: &Path) -> Result<NamedGrants, ServerError> {
    let mut named = NamedGrants::default();
    for (name, g) in &config.plugin_grants {
        let at = format!("config: at `plugin-grants.{name}`");
        let grants = grant_spec::grants(&at, &g.grant_fs, &g.grant_net, &g.grant_env)?;
        state_guard::check(state, &grants, &at)?;
        if name == "*" {
            named.fallback = Some(grants);
        } else {
            named.by_name.insert(name.clone(), grants);
        }
    }
    Ok(named)
}

/// Who answers each configured agent's asks, where the config says.
fn approval_channels(config: &Config) -> BTreeMap<String, ApprovalChannel> {
    use warden_policy::config::Approvals;
    config
        .agents
        .iter()
        .filter_map(|(id, a)| {
            let channel = match a.approvals? {
                Approvals::Client => ApprovalChannel::Client,
                Approvals::Operator => ApprovalChannel::Operator,
            };
            Some((id.clone(), channel))
        })
        .collect()
}

/// What the background load of a starting host needs.
struct LoadJob {
    runtime: warden_runtime::Runtime,
    first: FirstLoad,
    /// The configured plugins' grants, in order.
    grants: Vec<warden_api::Grants>,
    sandbox: Option<Arc<warden_sandbox::SandboxTools>>,
    live: Arc<LivePlugins>,
    agent: String,
    gate: Gate,
}

/// Loads the configured and the installed plugins (see
/// [`LivePlugins::load_initial`]) while it connects the sandbox; says the
/// tools are listed once their table is whole and the sandbox answered
/// (or did not), and the host ready when every plugin loaded; or keeps the
/// error for the transport and says why the load failed.
async fn load(
    job: LoadJob,
    loading: warden_mcp::Loading,
    failure: Arc<std::sync::Mutex<Option<ServerError>>>,
) {
    let sandbox = async {
        if let Some(tools) = &job.sandbox
            && let Err(e) = tools.connect().await
        {
            tracing::warn!(error = %e, "the sandboxed tools are unavailable until the sandbox backend answers");
        }
    };
    let (table, whole) = tokio::sync::oneshot::channel();
    let plugins = job.live.load_initial(job.first, job.grants, move || {
        let _ = table.send(());
    });
    let listed = async {
        let ((), listed) = tokio::join!(sandbox, whole);
        if listed.is_ok() {
            loading.listed();
        }
    };
    let (loaded, ()) = tokio::join!(plugins, listed);
    match loaded {
        Ok(()) => {
            tracing::info!(
                agent = %job.agent, tools = job.gate.list_tools(&job.agent).len(), "serving"
            );
            loading.ready();
            sweep_cache(job.runtime).await;
        }
        Err(e) => {
            let reason = e.to_string();
            *failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
            loading.failed(reason);
        }
    }
}

/// Removes compile cache entries no load used for a long time, once the
/// start-up load is done (this load marked the ones it used).
async fn sweep_cache(runtime: warden_runtime::Runtime) {
    let swept =
        tokio::task::spawn_blocking(move || runtime.sweep_cache(std::time::SystemTime::now()))
            .await;
    if let Ok(Some(swept)) = swept
        && swept.files > 0
    {
        tracing::info!(
            files = swept.files,
            bytes = swept.bytes,
            unused_days = warden_runtime::UNUSED_FOR.as_secs() / 86_400,
            "removed unused compile cache entries"
        );
    }
}

/// The runtime, the registry, and the plugins' first load under way.
fn start_plugins(
    host: &HostOptions,
) -> Result<(Loaded, warden_registry::Registry, FirstLoad), ServerError> {
    let loaded = Loaded::prepare(host)?;
    let registry = warden_registry::Registry::open(
        &host.state_dir,
        loaded.admission.clone(),
        loaded.runtime.clone(),
    )?;
    let first = FirstLoad::start(
        loaded.runtime.clone(),
        loaded.admission.clone(),
        registry.clone(),
        loaded.wanted.iter().map(|(path, _)| path.clone()).collect(),
        Some(Arc::new(state::admission_memo(&host.state_dir)?)),
    );
    Ok((loaded, registry, first))
}

impl Host {
    /// [`Host::begin`], then waits until the plugins are loaded: the host
    /// returned serves every tool, and a plugin that fails to load is this
    /// call's error.
    pub async fn start(options: ServeOptions) -> Result<Host, ServerError> {
        let host = Host::begin(options).await?;
        match host.ready().await {
            Ok(()) => Ok(host),
            Err(e) => {
                host.shutdown().await;
                Err(e)
            }
        }
    }

    /// Waits until the plugins are loaded; their load's error when it
    /// failed.
    pub async fn ready(&self) -> Result<(), ServerError> {
        match self.startup.wait().await {
            Ok(()) => Ok(()),
            Err(reason) => Err(self
                .failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .unwrap_or(ServerError::Usage(reason))),
        }
    }

    /// Resolves only when the plugins' load failed, with its error.
    async fn failed(&self) -> ServerError {
        match self.ready().await {
            Err(e) => e,
            Ok(()) => std::future::pending().await,
        }
    }

    /// Assembles and starts a host: opens the state, builds the gate with
    /// every durable hook, applies stored rules, starts the admin socket,
    /// the watch and the trust tick, and starts loading the plugins (and
    /// the installed ones) in the background. A transport answers
    /// `initialize` at once and holds `tools/list` and `tools/call` until
    /// the load ends ([`Host::ready`]); if it fails, the transport stops
    /// with its error.
    pub async fn begin(options: ServeOptions) -> Result<Host, ServerError> {
        let host = &options.host;
        let config = &host.config;
        let state_dir = &host.state_dir;
        // Registering the first tools needs the schema compiler's own
        // tables: built on a spare core now, not after the admissions.
        tokio::task::spawn_blocking(warden_gate::ArgsValidator::prepare);
        std::fs::create_dir_all(state_dir).map_err(|e| {
            ServerError::io(
                format!("creating the state directory {}", state_dir.display()),
                e,
            )
        })?;
        config
            .progressive_trust
            .validate()
            .map_err(|e| ServerError::config("progressive-trust", e))?;
        let instance = if config.bridges.is_empty() {
            String::new()
        } else {
            state::sandbox_instance(state_dir)?
        };
        let bridges = crate::bridges::plan_all(&config.bridges, &config.secrets, &instance)?;
        let named = named_grants(config, state_dir)?;
        // Both halves below read the host key; made first when missing,
        // so neither makes its own.
        state::ensure_key(state_dir)?;
        // The runtime (its engine, linker and instance pool) and the
        // registry are built on another core while this one opens the
        // state; the plugins' admission and load start as soon as they
        // exist and run through the rest of the start.
        let plugins = {
            let host = host.clone();
            tokio::task::spawn_blocking(move || start_plugins(&host))
        };
        let store = state::open(state_dir, &config.state);
        // The plugins' half reports first: its errors (a grant, a
        // signer) are the configuration's, as when it ran first.
        let (loaded, registry, first) = plugins
            .await
            .map_err(|e| ServerError::Usage(format!("preparing the plugins stopped: {e}")))??;
        let store = store?;
        let installed_grants: Vec<_> = registry
            .list()?
            .iter()
            .map(|entry| named.of(&entry.name))
            .collect();
        if loaded.admission.insecure_allow_unsigned {
            tracing::warn!("INSECURE: insecure-allow-unsigned is set; unsigned plugins load");
        }
        let serve = &config.serve;
        let clock = host.clock.clone();
        let hooks = Arc::new(Hooks(store.clone()));
        let book = Arc::new(
            ApprovalBook::durable(
                Duration::from_secs(serve.approval_timeout_secs.max(1)),
                hooks.clone(),
            )
            .map_err(|source| ServerError::Journal {
                what: "loading approvals from the state database".into(),
                source,
            })?
            .with_clock(clock.clone()),
        );
        let overrides = AgentOverrides {
            mode: options.mode,
            ..AgentOverrides::acting(&options.agent)
        };
        let policies = agents(config, &overrides, SERVE_AGENT)?;
        let agent_ids: Vec<String> = policies.iter().map(|a| a.id.clone()).collect();
        let binding_key = state::binding_key(state_dir, &config.state)?;
        let trust = TrustKeeper::load(
            config.progressive_trust.clone(),
            Arc::new(StoreTrust(store.clone())),
            clock.clone(),
            &agent_ids,
        )
        .map_err(|source| ServerError::Journal {
            what: "loading progressive trust from the state database".into(),
            source,
        })?;
        config.toolsmith.check()?;
        // Operators answer blueprints whether agents may propose or not.
        let toolsmith_key = Arc::new(crate::toolsmith::toolsmith_key(state_dir, config)?);
        let blueprints = Arc::new(
            crate::toolsmith::Toolsmith::new(
                store.clone(),
                config,
                Arc::new(warden_api::SystemClock),
            )
            .with_key(toolsmith_key.clone()),
        );
        // Recurring gaps go to the author command or to the model of the
        // client whose call made them recurring, when one is configured.
        let sampling = config.toolsmith.author_sampling.then(|| {
            Arc::new(crate::toolsmith::SamplingDesk::new(
                blueprints.clone(),
                std::time::Duration::from_secs(config.toolsmith.author_deadline_secs),
            ))
        });
        let (recurring, author) =
            match crate::toolsmith::AuthorCommand::configured(&config.toolsmith) {
                Some(command) => {
                    let (tx, rx) = tokio::sync::mpsc::channel(crate::toolsmith::AUTHOR_QUEUE);
                    (
                        Some(crate::gaps::RecurringAuthor::Command(tx)),
                        Some((command, rx)),
                    )
                }
                None => (
                    sampling.clone().map(crate::gaps::RecurringAuthor::Sampling),
                    None,
                ),
            };
        let toolsmith = config.toolsmith.enabled.then(|| {
            Arc::new(crate::toolsmith::Toolsmith::new(
                store.clone(),
                config,
                clock.clone(),
            ))
        });
        let gate = loaded
            .gate_builder(policies)?
            .env(loaded.env_with(&installed_grants))
            .approver(book.clone())
            .journal(hooks.clone())
            .grants(Arc::new(StoreGrants::new(store.clone(), clock.clone())))
            .gaps(Arc::new(crate::gaps::StoreGaps {
                store: store.clone(),
                rule: config.toolsmith.gap_rule()?,
                clock: clock.clone(),
                author: recurring,
            }))
            .clock(clock)
            .fingerprint_key(state::fingerprint_key(&binding_key))
            .capability_requests(config.capability_grants.bounds()?)
            .trust(Arc::new(trust));
        let gate = match toolsmith {
            Some(desk) => gate.toolsmith(desk),
            None => gate,
        }
        .build();
        let rules = crate::shared_rules::SharedRules::start(store.clone(), gate.clone())?;
        let mcp = warden_mcp::Server::new(
            Arc::new(gate.clone()),
            book.clone(),
            ServerOptions {
                name: "warden".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                disclosure: serve.disclosure,
                elicitation: serve.elicitation,
                approvals: approval_channels(config),
                request_state_key: state::request_state_key(&binding_key),
            },
        )?;
        mcp.set_trust_admin(Arc::new(gate.clone()));
        mcp.set_operator_view(Arc::new(crate::operator::Operator {
            store: store.clone(),
            gate: gate.clone(),
            clock: host.clock.clone(),
            state_dir: state_dir.to_path_buf(),
        }));
        mcp.set_toolsmith_admin(blueprints.clone());
        if let Some(desk) = sampling {
            mcp.set_sampling_author(desk);
        }
        let (loading, startup) = warden_mcp::startup();
        mcp.set_startup(startup.clone());
        let live = Arc::new(LivePlugins::new(
            gate.clone(),
            registry,
            mcp.clone(),
            named,
            hooks.clone(),
            startup.clone(),
            &store,
        ));
        mcp.set_plugin_admin(live.clone());
        let shutdown = CancellationToken::new();
        let mut tasks = Vec::new();
        if let Some(shared) = live.shared() {
            let sync = crate::plugin_sync::PluginSync::new(live.clone(), shared.clone());
            tasks.push(tokio::spawn(sync.run(shutdown.clone())));
        }
        if !bridges.is_empty() {
            let bridges = Arc::new(crate::bridges::LiveBridges::new(
                bridges,
                gate.clone(),
                mcp.clone(),
                store.clone(),
                startup.clone(),
            ));
            mcp.set_bridge_admin(bridges.clone());
            tasks.push(tokio::spawn(bridges.run(shutdown.clone())));
        }
        // The state database's first write of a run starts its log (the
        // file, its header and the directory synced): done now, beside the
        // first load and the handshake, not in the first call.
        let warming = store.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = warming.warm_up() {
                tracing::warn!(error = %e, "the state database could not start its log early; the first call will");
            }
        });
        let failure = Arc::new(std::sync::Mutex::new(None));
        tasks.push(tokio::spawn(load(
            LoadJob {
                runtime: loaded.runtime.clone(),
                first,
                grants: loaded.wanted.iter().map(|(_, g)| g.clone()).collect(),
                sandbox: loaded.sandbox.as_ref().map(|(tools, _)| tools.clone()),
                live: live.clone(),
                agent: options.agent.clone(),
                gate: gate.clone(),
            },
            loading,
            failure.clone(),
        )));
        if let Some((dir, every)) = &options.watch {
            if !dir.is_dir() {
                return Err(ServerError::Usage(format!(
                    "--watch {}: not a directory",
                    dir.display()
                )));
            }
            tasks.push(tokio::spawn(live.clone().watch(
                dir.clone(),
                (*every).max(Duration::from_millis(10)),
                shutdown.clone(),
            )));
        }
        {
            let ticking = gate.clone();
            tasks.push(tokio::spawn(crate::tick::every(
                options.trust_tick.max(Duration::from_millis(10)),
                shutdown.clone(),
                move || ticking.trust_tick(),
            )));
            if store.shared() {
                tasks.push(tokio::spawn(crate::tick::every(
                    crate::shared_rules::RULES_EVERY,
                    shutdown.clone(),
                    move || rules.tick(),
                )));
            }
            let sealing = gate.clone();
            tasks.push(tokio::spawn(crate::tick::every(
                warden_store::SIGN_EVERY,
                shutdown.clone(),
                move || sealing.seal_audit(),
            )));
            // Approved blueprints are built, proposals nobody answered in
            // time rejected (fail closed), and the generated tools kept
            // equal to the store's active ones.
            let builder = config.sandbox.as_ref().map(|sandbox| {
                Arc::new(crate::toolsmith::DockerBuilder::local(
                    &sandbox.image_prefix,
                    &state_dir.join("toolsmith-build"),
                )) as Arc<dyn crate::toolsmith::ComponentBuilder>
            });
            if let Some((command, queue)) = author {
                tasks.push(tokio::spawn(crate::toolsmith::author_recurring(
                    blueprints.clone(),
                    command,
                    queue,
                    shutdown.clone(),
                )));
            }
            let forge = Arc::new(crate::toolsmith::Forge::new(
                blueprints,
                crate::toolsmith::LazyRuntime::new(crate::toolsmith::fuel_config(Some(state_dir))?),
                gate.clone(),
                mcp.clone(),
                toolsmith_key,
                builder,
            ));
            let (startup, shutdown) = (startup.clone(), shutdown.clone());
            tasks.push(tokio::spawn(async move {
                let forging = async {
                    // Static tools first: a generated tool never shadows one.
                    if startup.wait().await.is_err() {
                        return;
                    }
                    if let Err(e) = forge.start().await {
                        tracing::error!(error = %e, "the toolsmith's generated tools were not restored");
                    }
                    forge.clone().run(shutdown.clone()).await;
                };
                // Shutting down never waits for a build or a validation:
                // one cut short is failed as interrupted.
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    () = forging => {}
                }
                forge.abandon();
            }));
        }
        let socket = state_dir.join("admin.sock");
        // Bound before anything is served: once a client is answered, the
        // admin API accepts connections too.
        let unavailable = |e: warden_mcp::McpError| {
            tracing::warn!(error = %e, "the admin API is not available; `warden approvals` cannot reach this server");
        };
        match warden_mcp::AdminSocket::bind(&socket).await {
            Ok(admin) => {
                let (mcp, shutdown) = (mcp.clone(), shutdown.clone());
                tasks.push(tokio::spawn(async move {
                    if let Err(e) = admin.serve(mcp, shutdown).await {
                        unavailable(e);
                    }
                }));
            }
            Err(e) => unavailable(e),
        }
        Ok(Host {
            loaded,
            startup,
            failure,
            gate,
            book,
            store,
            mcp,
            live,
            agent: options.agent,
            socket,
            shutdown,
            tasks,
        })
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    pub fn mcp(&self) -> &warden_mcp::Server {
        &self.mcp
    }

    pub fn book(&self) -> &Arc<ApprovalBook> {
        &self.book
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn plugins(&self) -> &Arc<LivePlugins> {
        &self.live
    }

    pub fn config(&self) -> &Config {
        &self.loaded.config
    }

    /// The admin API's socket in the state directory.
    pub fn admin_socket(&self) -> &Path {
        &self.socket
    }

    /// Stops when cancelled (signals, tests).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// How long a connection polls busily after each answer.
    fn busy_poll(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.loaded.config.serve.busy_poll_us)
    }

    /// Serves one MCP session on stdin/stdout as the serving agent, until
    /// the client closes it or the host shuts down.
    pub async fn serve_stdio(&self) -> Result<(), ServerError> {
        let served = tokio::select! {
            served = warden_mcp::serve_stdio(self.mcp.clone(), self.agent.clone(), self.busy_poll()) => served,
            () = self.shutdown.cancelled() => return Ok(()),
            failed = self.failed() => return Err(failed),
        };
        // A client that left before the plugins loaded (or a closed stdin)
        // must not hide why they did not load.
        self.ready().await?;
        Ok(served?)
    }

    /// Serves Streamable HTTP at `addr` (with the config's tokens, origins
    /// and hosts) until the host shuts down; `bound` is told the address.
    pub async fn serve_http(
        &self,
        addr: SocketAddr,
        bound: impl FnOnce(SocketAddr) + Send,
    ) -> Result<(), ServerError> {
        let serve = &self.loaded.config.serve;
        let tokens = serve
            .tokens
            .iter()
            .enumerate()
            .map(|(i, t)| {
                resolve_token(&t.token, &t.token_env, &format!("serve.tokens[{i}]"))
                    .map(|secret| (secret, t.agent.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let admin_tokens = serve
            .admin_tokens
            .iter()
            .enumerate()
            .map(|(i, t)| {
                resolve_token(&t.token, &t.token_env, &format!("serve.admin-tokens[{i}]"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let oauth = match &serve.oauth {
            Some(config) => {
                let agents: Vec<&str> = self
                    .loaded
                    .config
                    .agents
                    .keys()
                    .map(String::as_str)
                    .collect();
                let verifier = Arc::new(crate::oauth::verifier(config, &agents)?);
                // Keys fetched before the first request; a failure is
                // retried when a token needs them.
                if let Err(e) = verifier.keys().refresh(std::time::Duration::ZERO).await {
                    tracing::warn!(error = %e, "the issuer's key set could not be fetched; retrying on use");
                }
                Some(Arc::new(crate::oauth::resource_server(config, verifier)))
            }
            None => None,
        };
        let open_agent = (tokens.is_empty() && oauth.is_none()).then(|| self.agent.clone());
        let operators = serve
            .oauth
            .as_ref()
            .is_some_and(|o| !o.operators.is_empty());
        let console = console_options(&self.loaded.config.console, &admin_tokens, operators, addr)?;
        let options = HttpOptions {
            addr,
            tokens,
            admin_tokens,
            open_agent,
            allowed_origins: serve.allowed_origins.clone(),
            allowed_hosts: serve.allowed_hosts.clone(),
            max_body_bytes: serve.max_body_bytes,
            workers: serve.http_workers,
            busy_poll: self.busy_poll(),
            sessions: Some(Arc::new(crate::sources::StoreSessions(self.store.clone()))),
            oauth,
            console,
        };
        tokio::select! {
            served = warden_mcp::serve_http(self.mcp.clone(), options, self.shutdown.clone(), bound) => Ok(served?),
            failed = self.failed() => Err(failed),
        }
    }

    /// Stops the admin socket, the watch and the ticks, writes trust
    /// counters, signs the audit chain's head, and removes every
    /// container this host created.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
        self.gate.flush_trust();
        self.gate.seal_audit();
        if let Err(e) = self.store.checkpoint() {
            tracing::warn!(error = %e, "the write-ahead log was not checkpointed; the next start replays it");
        }
        self.loaded.stop_sandbox().await;
    }
}

/// The state directory: the flag (or `WARDEN_STATE_DIR`), else the
/// config's, else the per-user one when `per_user` (`warden call`, whose
/// grants often name the working directory), else `.warden`.
pub fn state_dir(flag: Option<&Path>, config: &Config, per_user: bool) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| config.state_dir.clone())
        .or_else(|| per_user.then(state::user_state_dir).flatten())
        .unwrap_or_else(|| PathBuf::from(".warden"))
}

/// The console's settings, when it is served: on by default with admin
/// tokens or OAuth `operators` (a person signs in with either); asked for
/// without any, an error.
fn console_options(
    config: &crate::config::ConsoleConfig,
    admin_tokens: &[String],
    oauth_operators: bool,
    addr: std::net::SocketAddr,
) -> Result<Option<warden_mcp::ConsoleOptions>, ServerError> {
    let can_sign_in = !admin_tokens.is_empty() || oauth_operators;
    match config.enabled {
        Some(false) => return Ok(None),
        None if !can_sign_in => return Ok(None),
        Some(true) if !can_sign_in => {
            return Err(ServerError::config(
                "console.enabled",
                "a person signs in to the console with an admin token or an operator's access \
                 token: add [[serve.admin-tokens]] or [[serve.oauth.operators]]",
            ));
        }
        _ => {}
    }
    if config.session_minutes == 0 {
        return Err(ServerError::config(
            "console.session-minutes",
            "a sign-in must last at least a minute",
        ));
    }
    let url = config.url.as_deref().map(console_url).transpose()?;
    Ok(Some(warden_mcp::ConsoleOptions {
        admin_tokens: admin_tokens.to_vec(),
        secure_cookie: config.secure_cookie.unwrap_or(!addr.ip().is_loopback()),
        session_ttl: std::time::Duration::from_secs(config.session_minutes * 60),
        url,
    }))
}

/// `[console] url`: an http(s) origin, possibly with a path prefix, with
/// no credentials, query or fragment; returned without a trailing slash.
fn console_url(raw: &str) -> Result<String, ServerError> {
    let wrong = |why: &str| {
        ServerError::config(
            "console.url",
            format!(
                "`{raw}` {why}; give the address people reach the console at, e.g. `https://warden.example.org`"
            ),
        )
    };
    let url = url::Url::parse(raw.trim()).map_err(|e| wrong(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(wrong("is not an http or https URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(wrong("names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(wrong("carries credentials"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(wrong("has a query or a fragment"));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}
