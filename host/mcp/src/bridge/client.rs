//! Warden as the client of a bridged server: the handler of what the
//! server sends on its own. A tool-list change wakes the bridge's re-list;
//! progress goes to the call that asked for it, in order ([`InOrder`]). Sampling is refused and no
//! roots are offered: a bridged server learns nothing of the host and
//! cannot make Warden's model act for it.
//!
//! Attack: a server that asks "the user" for input (elicitation) to phish
//! a password, to pass itself off as Warden's own approval prompt, or to
//! reach a person of another agent. Forms are declined unless the bridge
//! allows them (`allow-elicitation`); an allowed form goes only to the
//! client of the one call in flight on that session (with none or several,
//! nobody can say whose person it is for, and it is declined), its message
//! starts with the server's name and has secrets redacted, only form mode
//! is relayed (never a URL to open), and the answer is bounded in time.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{
    MaybeSendFuture, NotificationContext, RequestContext, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;
use tokio::sync::Notify;
use warden_api::CallEvents;

use super::scrub::scrub_text;

/// The handler of one upstream session.
#[derive(Clone)]
pub(crate) struct BridgeClient {
    /// The session this handler serves.
    key: String,
    /// Signalled when the server says its tool list changed.
    pub list_changed: Arc<Notify>,
    /// The sessions that said so since the last listing.
    changed_in: Arc<Mutex<Vec<String>>>,
    /// The calls in flight, by the progress token of their request, with
    /// where their progress (and forms) go.
    pub progress: Arc<Mutex<InFlight>>,
    /// Whether forms are relayed, and how.
    forms: Option<Arc<Forms>>,
}

/// The calls in flight on a session, by progress token, each with its
/// events sink if it has one.
type InFlight = HashMap<ProgressToken, Option<Arc<dyn CallEvents>>>;

/// How a bridge relays its server's forms.
#[derive(Debug)]
pub(crate) struct Forms {
    /// The bridge's name, which starts every relayed message.
    pub server: String,
    pub secrets: Vec<(String, String)>,
    /// How long a person has to answer.
    pub timeout: Duration,
}

impl BridgeClient {
    pub fn new(
        key: &str,
        list_changed: Arc<Notify>,
        changed_in: Arc<Mutex<Vec<String>>>,
        forms: Option<Arc<Forms>>,
    ) -> BridgeClient {
        BridgeClient {
            key: key.to_owned(),
            list_changed,
            changed_in,
            progress: Arc::default(),
            forms,
        }
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a call in flight (with or without a sink for its events).
    pub fn watch(&self, token: ProgressToken, events: Option<Arc<dyn CallEvents>>) {
        self.progress().insert(token, events);
    }

    /// The sink of the one call in flight; `Err` says why there is none.
    fn only_call(&self) -> Result<Arc<dyn CallEvents>, &'static str> {
        let calls = self.progress();
        let mut each = calls.values();
        match (each.next(), each.next()) {
            (Some(Some(events)), None) => Ok(events.clone()),
            (Some(None), None) => Err("the call in flight has no client to ask"),
            (None, _) => Err("no call is in flight on this session"),
            (Some(_), Some(_)) => Err("several calls are in flight on this session"),
        }
    }

    /// Relays a form to the client of the call in flight, or declines it
    /// saying why not.
    async fn answer(&self, request: ElicitRequestParams) -> ElicitResult {
        match self.relay(request).await {
            Ok(answer) => {
                tracing::info!(session = %self.key, action = ?answer.action, "a bridged server's form was answered");
                answer
            }
            Err(why) => {
                tracing::warn!(session = %self.key, %why, "a bridged server's form was declined");
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    }

    async fn relay(&self, request: ElicitRequestParams) -> Result<ElicitResult, String> {
        let Some(forms) = &self.forms else {
            return Err("this bridge does not relay forms (`allow-elicitation`)".into());
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err("only forms are relayed, never a URL to open".into());
        };
        let events = self.only_call()?;
        let message = scrub_text(&format!("[{}] {message}", forms.server), &forms.secrets);
        let request = json!({
            "mode": "form",
            "message": message,
            "requestedSchema": requested_schema,
        });
        let answer = tokio::time::timeout(forms.timeout, events.elicit(request))
            .await
            .map_err(|_| format!("nobody answered within {} s", forms.timeout.as_secs()))??;
        serde_json::from_value(answer).map_err(|e| format!("the answer is not a form result: {e}"))
    }

    /// Hands a server's progress to the call it is for, if that call
    /// wants it. Called in wire order by [`InOrder`], never by rmcp's
    /// notification tasks (which run in no particular order, so the last
    /// steps could lose the race against the result).
    fn deliver(calls: &Mutex<InFlight>, params: &ProgressNotificationParam) {
        let events = calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned()
            .flatten();
        if let Some(events) = events {
            events.progress(params.progress, params.total, params.message.as_deref());
        }
    }

    pub fn unwatch(&self, token: &ProgressToken) {
        self.progress().remove(token);
    }
}

impl ClientHandler for BridgeClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.forms.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("warden-bridge", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.answer(request).await)
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        {
            let mut changed = self
                .changed_in
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            changed.retain(|k| *k != self.key);
            changed.push(self.key.clone());
        }
        self.list_changed.notify_one();
        std::future::ready(())
    }
}

/// A session's transport, seen by the bridge before rmcp: a server's
/// progress reaches its call in the order the server sent it, before the
/// call's result.
pub(crate) struct InOrder<T> {
    inner: T,
    calls: Arc<Mutex<InFlight>>,
}

impl<T> InOrder<T> {
    pub fn new(inner: T, client: &BridgeClient) -> InOrder<T> {
        InOrder {
            inner,
            calls: client.progress.clone(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(n) = &message
            && let ServerNotification::ProgressNotification(p) = &n.notification
        {
            BridgeClient::deliver(&self.calls, &p.params);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
