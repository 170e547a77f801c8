#![allow(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577 in 2026-07-28, but older revisions use it and the issue requires it"
)]
//! The MCP server handler: one [`Server`] per process holding the host,
//! the approvals book, disclosure state and list-changed listeners; one
//! session handler per MCP session (stdio connection, HTTP session or
//! sessionless request) that knows its agent and logging level.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, SetLevelRequestParams,
    SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use warden_api::{
    ApprovalChannel, Approvals, Approver, CallContext, CallHooks, CallRequest, Envelope, ErrorType,
    HostCode, ToolHost, ToolSpec, TrustAdmin,
};

use crate::approve::{ClientAsk, ElicitingApprover, Offered, Prompt};
use crate::convert;
use crate::disclosure::{self, Disclosure, DisclosureConfig};
use crate::events::{LogThreshold, McpEvents};
use crate::http::TokenAgent;
use crate::notify::Notifier;
use crate::sampling::Question;
use crate::seal::Sealer;

/// How long announcing a list change may hold up the request that made it.
const ANNOUNCE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a finished call's progress and log lines may take to flush.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// How the server presents itself and behaves.
#[derive(Clone)]
pub struct ServerOptions {
    pub name: String,
    pub version: String,
    pub disclosure: DisclosureConfig,
    /// Whether asks may be answered through the client's elicitation at
    /// all. False: every agent's asks wait for an operator, whatever
    /// `approvals` says.
    pub elicitation: bool,
    /// Who answers each agent's asks, where the configuration says. An
    /// agent not listed: an operator when it connects with a bearer token
    /// (it holds its own credentials and could answer for itself), the
    /// person behind its client otherwise (stdio, loopback without
    /// tokens).
    pub approvals: BTreeMap<String, ApprovalChannel>,
    /// The secret that seals request states (at least 32 bytes; derive it
    /// from the host key so states survive a restart).
    pub request_state_key: Vec<u8>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("disclosure", &self.disclosure)
            .field("elicitation", &self.elicitation)
            .field("approvals", &self.approvals)
            .finish_non_exhaustive()
    }
}

impl ServerOptions {
    /// Who answers `agent`'s asks on a connection that did (`token`) or
    /// did not authenticate with a bearer token.
    pub fn channel(&self, agent: &str, token: bool) -> ApprovalChannel {
        if !self.elicitation {
            return ApprovalChannel::Operator;
        }
        match self.approvals.get(agent) {
            Some(channel) => *channel,
            None if token => ApprovalChannel::Operator,
            None => ApprovalChannel::Client,
        }
    }
}

impl Shared {
    /// Waits until the host's tool table is whole.
    async fn listed(&self) -> Result<(), ErrorData> {
        match self.startup.get() {
            Some(startup) => startup.listed().await.map_err(|reason| {
                ErrorData::internal_error(
                    format!("the host could not load its tools: {reason}"),
                    None,
                )
            }),
            None => Ok(()),
        }
    }
}

struct Shared {
    host: Arc<dyn ToolHost>,
    book: Arc<dyn Approvals>,
    sealer: Sealer,
    /// Makes session ids unique across restarts (grants can be bound to a
    /// session).
    instance: u64,
    disclosure: Disclosure,
    notifier: Notifier,
    options: ServerOptions,
    sessions: AtomicU64,
    plugins: std::sync::OnceLock<Arc<dyn warden_api::PluginAdmin>>,
    bridges: std::sync::OnceLock<Arc<dyn warden_api::BridgeAdmin>>,
    trust: std::sync::OnceLock<Arc<dyn TrustAdmin>>,
    toolsmith: std::sync::OnceLock<Arc<dyn warden_api::ToolsmithAdmin>>,
    /// Asks clients' models for blueprints (`[toolsmith] author-sampling`).
    sampling: std::sync::OnceLock<Arc<dyn warden_api::SamplingAuthor>>,
    operator: std::sync::OnceLock<Arc<dyn warden_api::OperatorView>>,
    /// A load of the host's tools still under way (see `startup.rs`).
    startup: std::sync::OnceLock<crate::Startup>,
    /// The base URL of this server's console, when it serves one: asks
    /// that wait for an operator are linked there (URL elicitation).
    console_link: std::sync::OnceLock<String>,
}

/// The MCP face of a host. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Asks that no MCP client answers wait in `book`. Fails on a
    /// request-state key shorter than 32 bytes.
    pub fn new(
        host: Arc<dyn ToolHost>,
        book: Arc<dyn Approvals>,
        options: ServerOptions,
    ) -> Result<Server, crate::McpError> {
        use std::hash::{BuildHasher, Hasher};
        let sealer = Sealer::new(&options.request_state_key)?;
        let instance = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Ok(Server {
            shared: Arc::new(Shared {
                host,
                book,
                sealer,
                instance,
                disclosure: Disclosure::new(options.disclosure),
                notifier: Notifier::default(),
                options,
                sessions: AtomicU64::new(1),
                plugins: std::sync::OnceLock::new(),
                bridges: std::sync::OnceLock::new(),
                trust: std::sync::OnceLock::new(),
                toolsmith: std::sync::OnceLock::new(),
                sampling: std::sync::OnceLock::new(),
                operator: std::sync::OnceLock::new(),
                startup: std::sync::OnceLock::new(),
                console_link: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Holds `tools/list` and `tools/call` until `startup` has its whole
    /// tool table (set
    /// once; a second call is ignored and returns false). `initialize`
    /// and `ping` are answered meanwhile.
    pub fn set_startup(&self, startup: crate::Startup) -> bool {
        self.shared.startup.set(startup).is_ok()
    }

    pub fn book(&self) -> &Arc<dyn Approvals> {
        &self.shared.book
    }

    /// Lets the admin API manage plugins through `admin` (set once; a
    /// second call is ignored and returns false).
    pub fn set_plugin_admin(&self, admin: Arc<dyn warden_api::PluginAdmin>) -> bool {
        self.shared.plugins.set(admin).is_ok()
    }

    pub(crate) fn plugin_admin(&self) -> Option<Arc<dyn warden_api::PluginAdmin>> {
        self.shared.plugins.get().cloned()
    }

    /// Lets the admin API manage bridged servers through `admin` (set
    /// once; a second call is refused and returns false).
    pub fn set_bridge_admin(&self, admin: Arc<dyn warden_api::BridgeAdmin>) -> bool {
        self.shared.bridges.set(admin).is_ok()
    }

    pub(crate) fn bridge_admin(&self) -> Option<Arc<dyn warden_api::BridgeAdmin>> {
        self.shared.bridges.get().cloned()
    }

    /// Lets the admin API show and change progressive trust through
    /// `admin` (set once; a second call is ignored and returns false).
    pub fn set_trust_admin(&self, admin: Arc<dyn TrustAdmin>) -> bool {
        self.shared.trust.set(admin).is_ok()
    }

    pub(crate) fn trust_admin(&self) -> Option<Arc<dyn TrustAdmin>> {
        self.shared.trust.get().cloned()
    }

    /// Lets the admin API show, approve and reject the toolsmith's
    /// blueprints through `admin` (set once; a second call is ignored
    /// and returns false).
    pub fn set_toolsmith_admin(&self, admin: Arc<dyn warden_api::ToolsmithAdmin>) -> bool {
        self.shared.toolsmith.set(admin).is_ok()
    }

    pub(crate) fn toolsmith_admin(&self) -> Option<Arc<dyn warden_api::ToolsmithAdmin>> {
        self.shared.toolsmith.get().cloned()
    }

    /// Asks the model behind a client that declared sampling for a
    /// blueprint when its call makes a capability gap recurring, through
    /// `author` (set once; a second call is ignored and returns false).
    pub fn set_sampling_author(&self, author: Arc<dyn warden_api::SamplingAuthor>) -> bool {
        self.shared.sampling.set(author).is_ok()
    }

    /// Links asks that wait for an operator to the console at `base`
    /// (its scheme, host and port, as people reach it) for clients that
    /// take URL elicitation (set once; a second call is ignored and
    /// returns false).
    pub fn set_console_link(&self, base: String) -> bool {
        self.shared.console_link.set(base).is_ok()
    }

    /// Lets the console show agents, grants and the audit trail through
    /// `view` (set once; a second call is ignored and returns false).
    pub fn set_operator_view(&self, view: Arc<dyn warden_api::OperatorView>) -> bool {
        self.shared.operator.set(view).is_ok()
    }

    pub(crate) fn operator_view(&self) -> Option<Arc<dyn warden_api::OperatorView>> {
        self.shared.operator.get().cloned()
    }

    /// Tells every connected client that its tool list may have changed
    /// (plugins were added, replaced or removed); each then lists again
    /// and sees its own agent's tools. A slow listener delays this at most
    /// a second per agent.
    pub async fn tools_changed(&self) {
        for agent in self.shared.notifier.agents() {
            let notify = self.shared.notifier.tools_changed(&agent);
            if tokio::time::timeout(ANNOUNCE, notify).await.is_err() {
                tracing::debug!(%agent, "a tools/list_changed listener is slow; moving on");
            }
        }
    }

    /// The host ends the tasks that ran in session `id`.
    pub(crate) async fn end_session(&self, id: &str) {
        self.shared.host.end_session(id).await;
    }

    /// A handler for one MCP session. `agent` fixes the agent (stdio);
    /// without it, each request names its agent through its bearer token.
    /// When the handler is dropped (the session ended), the host ends the
    /// tasks that ran in it.
    pub fn session(&self, agent: Option<String>) -> Session {
        let n = self.shared.sessions.fetch_add(1, Ordering::Relaxed);
        Session {
            shared: self.shared.clone(),
            agent,
            id: format!("s-{:08x}-{n}", self.shared.instance & 0xffff_ffff),
            threshold: LogThreshold::off(),
            registered: AtomicBool::new(false),
            tasked: AtomicBool::new(false),
            end_on_drop: true,
            listen_from: AtomicU64::new(0),
        }
    }
}

/// One MCP session.
pub struct Session {
    shared: Arc<Shared>,
    agent: Option<String>,
    id: String,
    threshold: LogThreshold,
    registered: AtomicBool,
    /// A call of this session ran under a task: its end ends tasks.
    tasked: AtomicBool,
    /// Dropping the handler ends the session's tasks (HTTP sessions);
    /// false when its owner ends them and waits (a stream).
    pub(crate) end_on_drop: bool,
    /// The change count when a subscriptions/listen was accepted (before
    /// rmcp acknowledges it and before its stream is registered).
    listen_from: AtomicU64,
}

impl Session {
    /// This session's id (calls carry it; tasks default to it).
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

fn discovery_tools() -> Vec<Tool> {
    let schema = |v: Value| match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    };
    let mut list = Tool::new(
        disclosure::LIST,
        "Lists the tools you may use: name, one-line summary, category and cost tier. Page with `offset` when `next_offset` is set.",
        schema(
            json!({"type": "object", "properties": {"offset": {"type": "integer", "minimum": 0}}, "additionalProperties": false}),
        ),
    );
    list.title = Some("List available tools".into());
    let mut load = Tool::new(
        disclosure::LOAD,
        "Returns a tool's full definition (schema, examples, failure modes) and adds it to your tool list.",
        schema(
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
        ),
    );
    load.title = Some("Load a tool".into());
    let mut resource = Tool::new(
        disclosure::RESOURCE,
        "Returns one of a tool's documents (ids are in the tool's `resources`).",
        schema(
            json!({"type": "object", "properties": {"tool": {"type": "string"}, "id": {"type": "string"}}, "required": ["tool", "id"], "additionalProperties": false}),
        ),
    );
    resource.title = Some("Load a tool document".into());
    for tool in [&mut list, &mut load, &mut resource] {
        let mut hints = rmcp::model::ToolAnnotations::default();
        hints.read_only_hint = Some(true);
        hints.open_world_hint = Some(false);
        tool.annotations = Some(hints);
    }
    vec![list, load, resource]
}

fn error_result(error_type: ErrorType, code: &str, message: String) -> CallToolResult {
    convert::result(Envelope::error(error_type, code, message))
}

impl Session {
    /// The agent this request acts for.
    fn agent(&self, ctx: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        self.identity(ctx).map(|(agent, _)| agent)
    }

    /// The agent this request acts for, and whether it authenticated with
    /// a bearer token.
    fn identity(&self, ctx: &RequestContext<RoleServer>) -> Result<(String, bool), ErrorData> {
        if let Some(agent) = &self.agent {
            return Ok((agent.clone(), false));
        }
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<TokenAgent>())
            .map(|t| (t.agent.clone(), t.token))
            .ok_or_else(|| ErrorData::invalid_request("no agent is bound to this request", None))
    }

    /// The signed-in principal of this request (OAuth), if any.
    fn principal(&self, ctx: &RequestContext<RoleServer>) -> Option<warden_api::Principal> {
        if self.agent.is_some() {
            return None;
        }
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<TokenAgent>())
            .and_then(|t| t.principal.clone())
    }

    /// The session a call belongs to: this session's id, or none (empty)
    /// for a sessionless 2026-07-28 HTTP request, which has no session to
    /// bind anything to.
    fn call_session(&self, ctx: &RequestContext<RoleServer>) -> String {
        if self.agent.is_some() || !is_modern(ctx) {
            self.id.clone()
        } else {
            String::new()
        }
    }

    /// Remembers this session's peer for tools/list_changed (once). Only
    /// sessions on older revisions: 2026-07-28 clients have no session and
    /// hear about changes on their subscriptions/listen streams.
    fn register(&self, agent: &str, ctx: &RequestContext<RoleServer>) {
        if is_modern(ctx) {
            return;
        }
        if !self.registered.swap(true, Ordering::Relaxed) {
            self.shared.notifier.add_peer(agent, &ctx.peer);
        }
    }

    /// Tells the agent's listeners its list changed, before the request
    /// that changed it is answered (so a client sees the notice first);
    /// a slow listener delays this at most a second.
    async fn announce(&self, agent: &str) {
        let notify = self.shared.notifier.tools_changed(agent);
        if tokio::time::timeout(ANNOUNCE, notify).await.is_err() {
            tracing::debug!(agent, "a tools/list_changed listener is slow; moving on");
        }
    }

    /// The discovery tools, when disclosure is on for this agent.
    async fn discovery(&self, agent: &str, name: &str, args: &Value) -> Option<CallToolResult> {
        if ![disclosure::LIST, disclosure::LOAD, disclosure::RESOURCE].contains(&name) {
            return None;
        }
        let permitted = self.shared.host.list_tools(agent);
        let d = &self.shared.disclosure;
        if !d.active(permitted.len()) {
            return None;
        }
        let text = |field: &str| args.get(field).and_then(Value::as_str).map(str::to_owned);
        let result = match name {
            disclosure::LIST => {
                let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0);
                let page = d.list(&permitted, usize::try_from(offset).unwrap_or(usize::MAX));
                convert::result(Envelope::ok(page))
            }
            disclosure::LOAD => match text("name").and_then(|n| find(&permitted, &n)) {
                Some(spec) => {
                    let loaded = d.load(agent, spec);
                    if loaded.changed {
                        self.announce(agent).await;
                    }
                    convert::result(Envelope::ok(json!({
                        "tool": loaded.body,
                        "unloaded": loaded.unloaded,
                    })))
                }
                None => error_result(
                    ErrorType::UnknownTool,
                    "not_found",
                    format!(
                        "no tool named `{}` is available to you; call {} to see what is",
                        text("name").unwrap_or_default(),
                        disclosure::LIST
                    ),
                ),
            },
            _ => match (text("tool"), text("id")) {
                (Some(tool), Some(id)) => {
                    convert::result(self.shared.host.resource(agent, &tool, &id).await)
                }
                _ => error_result(
                    ErrorType::ArgumentValidationError,
                    "invalid_argument",
                    format!("{} needs `tool` and `id` strings", disclosure::RESOURCE),
                ),
            },
        };
        Some(result)
    }
}

fn find<'a>(specs: &'a [ToolSpec], name: &str) -> Option<&'a ToolSpec> {
    let name = name.trim().to_ascii_lowercase();
    specs.iter().find(|s| s.name.as_str() == name)
}

fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= "2026-07-28")
}

fn is_pending(envelope: &Envelope) -> bool {
    envelope.host_code() == Some(HostCode::ApprovalPending)
}

/// The `_meta` key naming the task a request belongs to, as MCP's tasks
/// utility relates messages to a task (`{"taskId": ...}`).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// Warden's own `_meta` keys: a task id (a string), and the task's
/// difficulty in 0..=1 for progressive trust.
const TASK: &str = "dev.warden/task";
const DIFFICULTY: &str = "dev.warden/difficulty";

/// The task a request names in its `_meta`, if any (at most 128 printable
/// characters: it becomes a container label).
fn meta_task(meta: &rmcp::model::RequestMetaObject) -> Option<String> {
    let task = meta
        .get(TASK)
        .and_then(Value::as_str)
        .or_else(|| meta.get(RELATED_TASK)?.get("taskId")?.as_str())?;
    let task = task.trim();
    let ok = !task.is_empty() && task.len() <= 128 && task.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| task.to_owned())
}

/// The difficulty a request gives in its `_meta`, if a number in 0..=1.
fn meta_difficulty(meta: &rmcp::model::RequestMetaObject) -> Option<f64> {
    meta.get(DIFFICULTY)
        .and_then(Value::as_f64)
        .filter(|d| (0.0..=1.0).contains(d))
}

impl Drop for Session {
    /// The session ended: the host ends the tasks that ran in it (per-task
    /// containers go now, not after their idle grace period).
    fn drop(&mut self) {
        if !self.end_on_drop || !self.tasked.load(Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let host = self.shared.host.clone();
        let id = std::mem::take(&mut self.id);
        runtime.spawn(async move { host.end_session(&id).await });
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new(
                self.shared.options.name.clone(),
                self.shared.options.version.clone(),
            ))
            .with_instructions(
                "Warden runs each tool call under a policy: a call may run, be denied (the \
                 result says by which rule and what would allow it), or wait for a person's \
                 approval (answer the approval prompt, or retry after the approval id in the \
                 result is answered).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.shared.listed().await?;
        let agent = self.agent(&ctx)?;
        self.register(&agent, &ctx);
        let permitted = self.shared.host.list_tools(&agent);
        let d = &self.shared.disclosure;
        let tools = if d.active(permitted.len()) {
            let mut tools = discovery_tools();
            tools.extend(d.loaded(&agent, &permitted).into_iter().map(convert::tool));
            tools
        } else {
            permitted.iter().map(convert::tool).collect()
        };
        let mut tools = tools;
        if self.shared.host.offers_capability_requests() {
            tools.push(crate::capability::tool());
        }
        if self.shared.host.offers_toolsmith() {
            tools.push(crate::toolsmith::tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.shared.listed().await?;
        let (agent, token) = self.identity(&ctx)?;
        self.register(&agent, &ctx);
        // Moved, not cloned: arguments can be large (file contents).
        let CallToolRequestParams {
            name,
            arguments,
            input_responses,
            request_state,
            ..
        } = params;
        let name = name.into_owned();
        let args = Value::Object(arguments.unwrap_or_default());
        if let Some(result) = self.discovery(&agent, &name, &args).await {
            return Ok(result.into());
        }
        let request_id = match serde_json::to_value(&ctx.id) {
            Ok(Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => String::new(),
        };
        let session = self.call_session(&ctx);
        // A call's task: the one its `_meta` names, else its session's (a
        // client that names no tasks works as one task per session).
        let task = meta_task(&ctx.meta).or_else(|| (!session.is_empty()).then(|| session.clone()));
        if task.is_some() && !session.is_empty() {
            self.tasked.store(true, Ordering::Relaxed);
        }
        let context = CallContext {
            agent,
            session,
            task,
            request_id,
            principal: self.principal(&ctx),
        };
        let book = &self.shared.book;
        let elicitation = ctx.client_capabilities().and_then(|c| c.elicitation);
        let elicitation = elicitation.as_ref();
        // An empty `elicitation` capability means forms (the revisions
        // before URL mode).
        let declared = elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none());
        let channel = self.shared.options.channel(&context.agent, token);
        let elicits = declared && channel == ApprovalChannel::Client;
        let modern = is_modern(&ctx);
        let prompt = if elicits {
            Prompt::Form
        } else {
            match self.shared.console_link.get() {
                Some(base)
                    if modern
                        && self.shared.options.elicitation
                        && channel == ApprovalChannel::Operator
                        && elicitation.is_some_and(|e| e.url.is_some()) =>
                {
                    Prompt::Link(base.clone())
                }
                _ => Prompt::Nothing,
            }
        };
        // Anything the client sent as an answer is checked by the ask,
        // unless it answers a question put to the client's model.
        let mut offered = match (request_state, input_responses) {
            (None, None) => None,
            (state, responses) => Some(Offered {
                state: state.unwrap_or_default(),
                responses: responses.unwrap_or_default(),
            }),
        };
        if let Some(answer) = offered.take_if(|o| crate::sampling::answers_a_question(o))
            && let Err(message) = crate::sampling::answer(
                self.shared.sampling.get().map(|a| a.as_ref()),
                &self.shared.sealer,
                &answer,
                &context.agent,
                &name,
                &args,
            )
        {
            return Ok(error_result(
                ErrorType::ArgumentValidationError,
                "invalid_argument",
                message,
            )
            .into());
        }
        let legacy_prompt = elicits && !modern && offered.is_none();
        let client_ask = Arc::new(ClientAsk {
            book: book.clone(),
            sealer: self.shared.sealer.clone(),
            prompt,
            offered,
            pending: Mutex::new(None),
            stepped_back: AtomicBool::new(false),
        });
        let approver: Arc<dyn Approver> = if legacy_prompt {
            Arc::new(ElicitingApprover {
                peer: ctx.peer.clone(),
                expiry: book.expiry(),
            })
        } else {
            client_ask.clone()
        };
        // A sink only when the client wants progress or log lines, or can
        // fill in a bridged server's forms.
        let progress_token = ctx.meta.get_progress_token();
        let forms = declared && !modern;
        let (events, forwarder) = if progress_token.is_some() || !self.threshold.is_off() || forms {
            let (sink, forwarder) = McpEvents::start(
                ctx.peer.clone(),
                progress_token,
                self.threshold.clone(),
                forms,
            );
            (
                Some(sink as Arc<dyn warden_api::CallEvents>),
                Some(forwarder),
            )
        } else {
            (None, None)
        };
        // What a question to the client's model would need, kept only
        // when this server asks clients' models for blueprints.
        let question = self.shared.sampling.get().map(|author| {
            let sampling = ctx
                .client_capabilities()
                .is_some_and(|c| c.sampling.is_some());
            Question {
                author: author.clone(),
                agent: context.agent.clone(),
                session: context.session.clone(),
                tool: name.clone(),
                // Sealed to on 2026-07-28 only.
                args: (sampling && modern).then(|| args.clone()),
                sampling,
            }
        });
        let request = CallRequest {
            tool: name,
            args,
            context,
        };
        // A `request_capability` call takes this path too: the gate asks
        // an operator for it whatever approver is attached here.
        let hooks = CallHooks {
            approver: Some(approver),
            events,
            difficulty: meta_difficulty(&ctx.meta),
        };
        let envelope = tokio::select! {
            envelope = self.shared.host.call_with(request, hooks) => envelope,
            () = ctx.ct.cancelled() => {
                tracing::info!(session = %self.id, "call cancelled by the client");
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        // The call dropped its events sink; let the queue drain so progress
        // and log lines arrive before the result.
        if let Some(forwarder) = forwarder {
            let _ = tokio::time::timeout(DRAIN, forwarder).await;
        }
        if modern
            && is_pending(&envelope)
            && let Some(input) = client_ask.input_required(book.expiry())
        {
            return match input {
                Ok(input) => Ok(CallToolResponse::InputRequired(input)),
                Err(message) => {
                    Ok(error_result(ErrorType::HostError, "host_error", message).into())
                }
            };
        }
        // When this call made a capability gap recurring, its client's
        // model is asked for a blueprint.
        if let Some(q) = question
            && let Some(input) = q.ask(&self.shared.sealer, &ctx.peer, modern).await
        {
            return Ok(CallToolResponse::InputRequired(input));
        }
        Ok(convert::result(envelope).into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.threshold.set(request.level);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.listen_from
            .store(self.shared.notifier.changes(), Ordering::SeqCst);
        let mut filter = SubscriptionFilter::new();
        filter.tools_list_changed = Some(true);
        Some(filter)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let agent = self.agent(subscription.request_context())?;
        let id = self
            .shared
            .notifier
            .add_stream(&agent, subscription.sink().clone());
        // The client may act as soon as it sees the acknowledgment, which
        // rmcp sends before this stream is registered: a change announced
        // in between is sent now rather than lost.
        if self.shared.notifier.changes() != self.listen_from.load(Ordering::SeqCst) {
            let _ = subscription.sink().notify_tool_list_changed().await;
        }
        subscription.cancelled().await;
        self.shared.notifier.remove(&agent, id);
        Ok(())
    }
}
