//! The `ServerHandler`: state shared by every session of the process, one
//! [`Session`] per MCP session (stdio: the process; HTTP: each session),
//! and the fan-out of `notifications/tools/list_changed`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelledNotificationParam, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    SubscriptionFilter,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleServer, SubscriptionContext, SubscriptionSink,
};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use serde_json::json;

use crate::log::EventLog;
use crate::tools::{self, Dynamic, ListMode};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What every session of the process shares.
#[derive(Debug)]
pub struct Shared {
    pub mode: ListMode,
    pub log: EventLog,
    dynamic: Mutex<Dynamic>,
    /// Peers that initialized (the legacy lifecycle): they get
    /// `notifications/tools/list_changed` directly.
    peers: Mutex<Vec<(String, Peer<RoleServer>)>>,
    /// Open `subscriptions/listen` streams (protocol 2026-07-28).
    sinks: Mutex<Vec<(u64, SubscriptionSink)>>,
    next_session: AtomicU64,
    next_sink: AtomicU64,
    /// How many list changes were announced: a listen stream registered
    /// after its acknowledgment (rmcp acknowledges first) catches up on
    /// one it missed.
    changes: AtomicU64,
}

impl Shared {
    pub fn new(mode: ListMode, log: EventLog) -> Arc<Self> {
        Arc::new(Self {
            mode,
            log,
            dynamic: Mutex::default(),
            peers: Mutex::default(),
            sinks: Mutex::default(),
            next_session: AtomicU64::new(1),
            next_sink: AtomicU64::new(1),
            changes: AtomicU64::new(0),
        })
    }

    /// A new session: its id is `<pid>-<n>`, unique across restarts.
    pub fn session(self: &Arc<Self>) -> Session {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        Session {
            shared: Arc::clone(self),
            id: format!("{}-{n}", std::process::id()),
            counter: AtomicU64::new(0),
            listen_from: AtomicU64::new(0),
        }
    }

    /// Adds the next `extra_N` tool and returns its name.
    pub fn add_extra(&self) -> String {
        let mut dynamic = lock(&self.dynamic);
        dynamic.extras += 1;
        format!("extra_{}", dynamic.extras)
    }

    pub fn set_echo_description(&self, description: String) {
        lock(&self.dynamic).echo_description = description;
    }

    /// Sends `notifications/tools/list_changed` to every initialized peer
    /// and every open listen stream; forgets the ones that are gone.
    pub async fn notify_list_changed(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        let peers = lock(&self.peers).clone();
        let mut gone = Vec::new();
        for (session, peer) in peers {
            if peer.notify_tool_list_changed().await.is_err() {
                gone.push(session);
            }
        }
        if !gone.is_empty() {
            lock(&self.peers).retain(|(session, _)| !gone.contains(session));
        }
        let sinks = lock(&self.sinks).clone();
        for (_, sink) in sinks {
            // A stream that closed meanwhile is removed by its `listen`.
            let _ = sink.notify_tool_list_changed().await;
        }
    }
}

/// The handler of one MCP session.
#[derive(Debug)]
pub struct Session {
    pub shared: Arc<Shared>,
    pub id: String,
    /// The `counter` tool's count.
    pub counter: AtomicU64,
    /// The list-change count when this session's listen stream was
    /// acknowledged.
    listen_from: AtomicU64,
}

impl ServerHandler for Session {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "warden-bridge-fixture",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.shared
            .log
            .write(&json!({"event": "list", "session": self.id}));
        let cursor = request.and_then(|r| r.cursor);
        let dynamic = lock(&self.shared.dynamic).clone();
        let (tools, next) = tools::page(self.shared.mode, &dynamic, cursor.as_deref())
            .map_err(|e| McpError::invalid_params(e, None))?;
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.shared.log.write(&json!({
            "event": "call",
            "tool": request.name,
            "session": self.id,
            "request": context.id,
        }));
        let args = request.arguments.unwrap_or_default();
        self.call(&request.name, &args, &context)
            .await
            .map(CallToolResponse::from)
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.shared.log.write(&json!({
            "event": "cancelled",
            "request": notification.request_id,
        }));
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        lock(&self.shared.peers).push((self.id.clone(), context.peer));
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.listen_from
            .store(self.shared.changes.load(Ordering::SeqCst), Ordering::SeqCst);
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let key = self.shared.next_sink.fetch_add(1, Ordering::Relaxed);
        lock(&self.shared.sinks).push((key, context.sink().clone()));
        if self.shared.changes.load(Ordering::SeqCst) != self.listen_from.load(Ordering::SeqCst) {
            let _ = context.sink().notify_tool_list_changed().await;
        }
        context.cancelled().await;
        lock(&self.shared.sinks).retain(|(k, _)| *k != key);
        Ok(())
    }
}
