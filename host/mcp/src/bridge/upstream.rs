//! One bridged server: its sessions, its judged listing, its calls.
//!
//! A [`Bridge`] is shared by everything that serves or manages the server:
//! the gate holds a [`BridgeBackend`] (a snapshot of the catalog it was
//! registered with, so a call runs against the definitions that were
//! published when it was looked up), the server crate re-lists on change
//! notices and operator commands, and status reads it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::Tool;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde::Serialize;
use tokio::sync::{Mutex, Notify};
use warden_api::{
    Backend, BackendCall, BoxFuture, Envelope, ErrorType, HostCode, Isolation, ToolSpec,
};

use super::catalog::{Catalog, Held, Listed};
use super::client::{BridgeClient, Forms};
use super::connector::{Connector, StderrLog};
use super::discovery;
use super::result;
use super::session::Live;
use super::settings::{BridgeSettings, SessionScope};

/// Consecutive failures that open the circuit, and how long it stays open.
const CIRCUIT_FAILURES: u32 = 5;
const CIRCUIT_OPEN: Duration = Duration::from_secs(30);

/// The session that lists tools when calls have their own per agent.
const LISTING_SESSION: &str = "listing";

/// A bridged server.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("name", &self.inner.settings.name)
            .finish_non_exhaustive()
    }
}

struct Inner {
    settings: BridgeSettings,
    connector: Arc<dyn Connector>,
    stderr: Arc<StderrLog>,
    /// The last listing, as listed (re-judged on approvals without
    /// asking the server again).
    listing: StdMutex<Option<Vec<Tool>>>,
    catalog: RwLock<Arc<Catalog>>,
    /// Why the last listing failed, if it did.
    problem: StdMutex<Option<String>>,
    sessions: StdMutex<HashMap<String, Slot>>,
    list_changed: Arc<Notify>,
    /// The sessions whose server said its tools changed, latest last.
    changed_in: Arc<StdMutex<Vec<String>>>,
    /// How the server's forms are relayed; `None`: declined.
    forms: Option<Arc<Forms>>,
    circuit: StdMutex<Circuit>,
    /// Whether a judged listing was registered with the gate.
    published: AtomicBool,
}

/// One session's place: empty until started, emptied when it ends.
type Slot = Arc<Mutex<Option<Arc<Live>>>>;

#[derive(Default)]
struct Circuit {
    failures: u32,
    open_until: Option<Instant>,
}

/// What a new judgement of a listing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged {
    /// The published set (names and definition digests): clients are told.
    pub visible: bool,
    /// Anything (also why a tool is held): the gate's registration is
    /// renewed.
    pub any: bool,
}

/// What `warden bridge status` shows of one server.
#[derive(Debug, Clone, Serialize)]
pub struct BridgeStatus {
    pub name: String,
    pub runtime: String,
    /// `starting` (not yet listed and published), `ready` or `failed`;
    /// `circuit open` after repeated
    /// failures.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub tools: Vec<ToolStatus>,
    /// Open upstream sessions (agents, or `shared` / `listing`).
    pub sessions: Vec<String>,
    /// The server's last stderr output (bounded, secrets redacted).
    pub stderr: String,
}

/// One listed tool in [`BridgeStatus`].
#[derive(Debug, Clone, Serialize)]
pub struct ToolStatus {
    pub upstream: String,
    pub advertised: String,
    pub digest: String,
    /// `published`, `not approved`, `definition changed`, `filtered`,
    /// `collision` or `invalid`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Bridge {
    pub fn new(
        settings: BridgeSettings,
        connector: Arc<dyn Connector>,
        stderr: Arc<StderrLog>,
    ) -> Bridge {
        let forms = settings.allow_elicitation.then(|| {
            Arc::new(Forms {
                server: settings.name.clone(),
                secrets: settings.secrets.clone(),
                timeout: settings.call_timeout,
            })
        });
        Bridge {
            inner: Arc::new(Inner {
                forms,
                settings,
                connector,
                stderr,
                listing: StdMutex::new(None),
                catalog: RwLock::new(Arc::new(Catalog::default())),
                problem: StdMutex::new(None),
                sessions: StdMutex::new(HashMap::new()),
                list_changed: Arc::new(Notify::new()),
                changed_in: Arc::default(),
                circuit: StdMutex::new(Circuit::default()),
                published: AtomicBool::new(false),
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.inner.settings.name
    }

    pub fn settings(&self) -> &BridgeSettings {
        &self.inner.settings
    }

    /// Signalled whenever the server says its tool list changed.
    pub fn list_changed(&self) -> Arc<Notify> {
        self.inner.list_changed.clone()
    }

    /// Lists the server's tools again (starting it if needed). On failure
    /// the previous listing stays, and the problem shows in status.
    ///
    /// The listing comes from the session whose server last said its
    /// tools changed, when it is still open: with a session per agent, a
    /// server that changes a tool in one agent's session has that change
    /// judged (and quarantined) for everyone, rather than hidden behind a
    /// listing session where nothing changed.
    pub async fn relist(&self) -> Result<(), String> {
        let default = match self.inner.settings.session_scope {
            SessionScope::Shared => "shared",
            SessionScope::PerAgent => LISTING_SESSION,
        };
        let changed: Vec<String> = std::mem::take(
            &mut *self
                .inner
                .changed_in
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut key = default.to_owned();
        for candidate in changed.iter().rev() {
            if self.inner.open_session(candidate).await.is_some() {
                key.clone_from(candidate);
                break;
            }
        }
        let key = key.as_str();
        let listed = match self.inner.session(key).await {
            Ok(live) => {
                live.touch();
                let listed = discovery::list_tools(
                    &live.peer,
                    &self.inner.settings,
                    self.inner.settings.init_timeout,
                )
                .await;
                if live.is_closed() {
                    self.inner.forget(key, &live).await;
                }
                listed
            }
            Err(e) => Err(e),
        };
        let mut problem = self
            .inner
            .problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match listed {
            Ok(tools) => {
                *problem = None;
                *self
                    .inner
                    .listing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(tools);
                Ok(())
            }
            Err(e) => {
                let e = super::scrub::scrub_text(&e, &self.inner.settings.secrets);
                *problem = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Judges the last listing again against `approved` pins and the
    /// names others own, and keeps the result: what changed.
    pub fn judge(
        &self,
        approved: &BTreeMap<String, String>,
        taken: &dyn Fn(&str) -> Option<String>,
    ) -> Judged {
        let listing = self
            .inner
            .listing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let catalog = match listing {
            Some(tools) => Catalog::build(&self.inner.settings, tools, approved, taken),
            None => Catalog::default(),
        };
        let mut current = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let judged = Judged {
            visible: current.visible() != catalog.visible(),
            any: current.judgement() != catalog.judgement(),
        };
        *current = Arc::new(catalog);
        judged
    }

    /// The current catalog's tools are in the gate now (after a listing
    /// was judged and registered): status says `ready`.
    pub fn set_published(&self) {
        self.inner.published.store(true, Ordering::SeqCst);
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The backend to register with the gate now: serves the published
    /// tools of the current catalog.
    pub fn backend(&self) -> Arc<dyn Backend> {
        Arc::new(BridgeBackend {
            bridge: self.inner.clone(),
            catalog: self.catalog(),
        })
    }

    /// Ends every session, all at once (each within its own bound); the
    /// next call or listing starts the server again.
    pub async fn restart(&self) {
        let slots: Vec<_> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        let mut ending = tokio::task::JoinSet::new();
        for (_, slot) in slots {
            ending.spawn(async move {
                if let Some(live) = slot.lock().await.take() {
                    live.close().await;
                }
            });
        }
        while ending.join_next().await.is_some() {}
        *self
            .inner
            .circuit
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Circuit::default();
    }

    /// Ends the sessions unused for longer than the idle limit.
    pub async fn reap_idle(&self) {
        let slots: Vec<(String, Slot)> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, slot) in slots {
            let Ok(mut guard) = slot.try_lock() else {
                continue;
            };
            let idle = guard
                .as_ref()
                .is_some_and(|live| live.idle() > self.inner.settings.idle_shutdown);
            if idle && let Some(live) = guard.take() {
                tracing::info!(bridge = %self.name(), session = %key, "an idle bridged session ends");
                live.close().await;
            }
        }
    }

    pub fn status(&self) -> BridgeStatus {
        let catalog = self.catalog();
        let problem = self
            .inner
            .problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let published = self.inner.published.load(Ordering::SeqCst);
        let state = if self.inner.circuit_open().is_some() {
            "circuit open"
        } else if problem.is_some() {
            "failed"
        } else if published {
            "ready"
        } else {
            "starting"
        };
        // Open sessions, and those being opened (their slot is busy).
        let mut sessions: Vec<String> = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, slot)| {
                slot.try_lock()
                    .map_or(true, |live| live.as_ref().is_some_and(|l| !l.is_closed()))
            })
            .map(|(key, _)| key.clone())
            .collect();
        sessions.sort();
        BridgeStatus {
            name: self.name().to_owned(),
            runtime: self.inner.connector.runtime().to_owned(),
            state: state.to_owned(),
            problem,
            tools: catalog.tools.iter().map(tool_status).collect(),
            sessions,
            stderr: self.inner.stderr.tail(),
        }
    }
}

fn tool_status(tool: &Listed) -> ToolStatus {
    let state = match &tool.held {
        None => "published",
        Some(Held::NotApproved) => "not approved",
        Some(Held::DefinitionChanged { .. }) => "definition changed",
        Some(Held::Filtered) => "filtered",
        Some(Held::Collision { .. }) => "collision",
        Some(Held::Invalid { .. }) => "invalid",
    };
    ToolStatus {
        upstream: tool.upstream.clone(),
        advertised: tool.advertised.clone(),
        digest: tool.digest.clone(),
        state: state.to_owned(),
        reason: tool.held.as_ref().map(ToString::to_string),
    }
}

impl Inner {
    /// Why calls are refused without trying, while the circuit is open.
    fn circuit_open(&self) -> Option<Duration> {
        let circuit = self.circuit.lock().unwrap_or_else(PoisonError::into_inner);
        circuit
            .open_until
            .and_then(|until| until.checked_duration_since(Instant::now()))
    }

    fn failed(&self) {
        let mut circuit = self.circuit.lock().unwrap_or_else(PoisonError::into_inner);
        circuit.failures += 1;
        if circuit.failures >= CIRCUIT_FAILURES {
            circuit.open_until = Some(Instant::now() + CIRCUIT_OPEN);
            circuit.failures = 0;
            tracing::warn!(bridge = %self.settings.name, "a bridged server failed repeatedly; its circuit opens");
        }
    }

    fn succeeded(&self) {
        let mut circuit = self.circuit.lock().unwrap_or_else(PoisonError::into_inner);
        circuit.failures = 0;
        circuit.open_until = None;
    }

    fn slot(&self, key: &str) -> Slot {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.to_owned())
            .or_default()
            .clone()
    }

    /// The live session `key`, opened (or reopened after a crash) when
    /// needed. Opening one session never waits for another's.
    async fn session(&self, key: &str) -> Result<Arc<Live>, String> {
        let slot = self.slot(key);
        let mut guard = slot.lock().await;
        if let Some(live) = guard.as_ref() {
            if !live.is_closed() {
                return Ok(live.clone());
            }
            if let Some(dead) = guard.take() {
                tokio::spawn(dead.close());
            }
        }
        let live = Live::open(
            &*self.connector,
            key,
            BridgeClient::new(
                key,
                self.list_changed.clone(),
                self.changed_in.clone(),
                self.forms.clone(),
            ),
            self.settings.init_timeout,
            self.settings.max_message(),
        )
        .await;
        match live {
            Ok(live) => {
                let live = Arc::new(live);
                tracing::info!(bridge = %self.settings.name, session = key, process = %live.describe, "bridged session started");
                *guard = Some(live.clone());
                Ok(live)
            }
            Err(e) => {
                self.failed();
                Err(format!("{} could not be started: {e}", self.settings.name))
            }
        }
    }

    /// The session `key` if it is open now (never starts one).
    async fn open_session(&self, key: &str) -> Option<Arc<Live>> {
        let slot = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()?;
        let guard = slot.lock().await;
        guard.as_ref().filter(|l| !l.is_closed()).cloned()
    }

    /// Drops the session `key` if it is still `live` (it died).
    async fn forget(&self, key: &str, live: &Arc<Live>) {
        let slot = self.slot(key);
        let mut guard = slot.lock().await;
        if guard.as_ref().is_some_and(|l| Arc::ptr_eq(l, live))
            && let Some(dead) = guard.take()
        {
            tokio::spawn(dead.close());
        }
    }
}

/// The gate's view of a bridge: the tools of one catalog.
pub struct BridgeBackend {
    bridge: Arc<Inner>,
    catalog: Arc<Catalog>,
}

impl std::fmt::Debug for BridgeBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeBackend")
            .field("name", &self.bridge.settings.name)
            .finish_non_exhaustive()
    }
}

impl Backend for BridgeBackend {
    fn tools(&self) -> Vec<ToolSpec> {
        self.catalog
            .published()
            .filter_map(|t| t.spec.clone())
            .collect()
    }

    fn isolation(&self) -> Isolation {
        match self.bridge.connector.runtime() {
            "host" => Isolation::Host,
            _ => Isolation::Container,
        }
    }

    fn withheld(&self, name: &str) -> Option<Envelope> {
        self.catalog.withheld(&self.bridge.settings.name, name)
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            let name = call.tool.name.as_str();
            let Some(tool) = self.catalog.get(name) else {
                return Envelope::host(
                    ErrorType::UnknownTool,
                    HostCode::NotFound,
                    format!("`{name}` is not published by {}", self.bridge.settings.name),
                );
            };
            self.bridge.call(tool, &call).await
        })
    }
}

impl Inner {
    async fn call(&self, tool: &Listed, call: &BackendCall<'_>) -> Envelope {
        let settings = &self.settings;
        if let Some(left) = self.circuit_open() {
            return result::unavailable(
                &tool.advertised,
                &format!(
                    "{} failed repeatedly; calls are refused for {} s more (circuit open)",
                    settings.name,
                    left.as_secs() + 1
                ),
                settings,
            );
        }
        // Agents' sessions are named apart from the listing and shared
        // ones, whatever an agent is called.
        let key = match settings.session_scope {
            SessionScope::PerAgent => format!("agent:{}", call.context.agent),
            SessionScope::Shared => "shared".to_owned(),
        };
        let key = key.as_str();
        let live = match self.session(key).await {
            Ok(live) => live,
            Err(e) => return result::unavailable(&tool.advertised, &e, settings),
        };
        live.touch();
        let mut params = CallToolRequestParams::new(tool.upstream.clone());
        if let Some(arguments) = call.args.as_object() {
            params = params.with_arguments(arguments.clone());
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = settings.call_timeout;
        let handle = match live
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => handle,
            Err(e) => {
                self.failed();
                self.forget(key, &live).await;
                return result::unavailable(
                    &tool.advertised,
                    &format!("upstream disconnected before the call was sent ({e})"),
                    settings,
                );
            }
        };
        let token = handle.progress_token.clone();
        live.client.watch(token.clone(), call.events.cloned());
        // A caller that goes away (a cancelled call) cancels upstream too.
        let mut cancel = CancelOnDrop {
            peer: Some(live.peer.clone()),
            id: handle.id.clone(),
        };
        let response = handle.await_response().await;
        cancel.peer = None;
        live.client.unwatch(&token);
        live.touch();
        match response {
            Ok(ServerResult::CallToolResult(result)) => {
                self.succeeded();
                let (envelope, redacted) = result::forwarded(result, tool, settings);
                if redacted {
                    tracing::warn!(bridge = %settings.name, tool = %tool.advertised, "a secret value was redacted from a result");
                }
                envelope
            }
            Ok(ServerResult::InputRequiredResult(_)) => Envelope::host(
                ErrorType::ToolError,
                HostCode::InvalidResult,
                format!(
                    "`{}`: the upstream answered \"input required\", which the protocol revision \
                     bridges speak (2025-11-25) does not allow; its forms come as \
                     `elicitation/create`, relayed with `allow-elicitation = true`",
                    tool.advertised
                ),
            ),
            Ok(_) => Envelope::host(
                ErrorType::ToolError,
                HostCode::InvalidResult,
                format!(
                    "`{}`: the upstream answered with something other than a tool result",
                    tool.advertised
                ),
            ),
            Err(ServiceError::Timeout { timeout }) => {
                self.succeeded();
                result::timed_out(&tool.advertised, timeout)
            }
            Err(ServiceError::McpError(error)) => {
                self.succeeded();
                result::upstream_error(&error, settings)
            }
            Err(e) => {
                self.failed();
                self.forget(key, &live).await;
                result::unavailable(
                    &tool.advertised,
                    &format!(
                        "upstream disconnected during the call ({e}); it was not retried, and the next call opens a new session"
                    ),
                    settings,
                )
            }
        }
    }
}

/// Sends `notifications/cancelled` for a request whose caller went away.
struct CancelOnDrop {
    peer: Option<rmcp::service::Peer<rmcp::RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let param = CancelledNotificationParam::new(
                Some(self.id.clone()),
                Some("cancelled by the caller".to_owned()),
            );
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}
