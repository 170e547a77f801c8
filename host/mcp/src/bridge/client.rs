//! Warden as the client of a bridged server: the handler of what the
//! server sends on its own. A tool-list change wakes the bridge's re-list;
//! progress goes to the call that asked for it. Sampling and elicitation
//! requests are refused (rmcp's defaults) and no roots are offered: a
//! bridged server learns nothing of the host and cannot make Warden's
//! model or person act for it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{MaybeSendFuture, NotificationContext};
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;
use warden_api::CallEvents;

/// The handler of one upstream session.
#[derive(Clone)]
pub(crate) struct BridgeClient {
    /// The session this handler serves.
    key: String,
    /// Signalled when the server says its tool list changed.
    pub list_changed: Arc<Notify>,
    /// The sessions that said so since the last listing.
    changed_in: Arc<Mutex<Vec<String>>>,
    /// Where each in-flight call's progress goes, by the progress token
    /// of its request.
    pub progress: Arc<Mutex<HashMap<ProgressToken, Arc<dyn CallEvents>>>>,
}

impl BridgeClient {
    pub fn new(
        key: &str,
        list_changed: Arc<Notify>,
        changed_in: Arc<Mutex<Vec<String>>>,
    ) -> BridgeClient {
        BridgeClient {
            key: key.to_owned(),
            list_changed,
            changed_in,
            progress: Arc::default(),
        }
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, Arc<dyn CallEvents>>> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn watch(&self, token: ProgressToken, events: Arc<dyn CallEvents>) {
        self.progress().insert(token, events);
    }

    pub fn unwatch(&self, token: &ProgressToken) {
        self.progress().remove(token);
    }
}

impl ClientHandler for BridgeClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("warden-bridge", env!("CARGO_PKG_VERSION")),
        )
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

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        let events = self.progress().get(&params.progress_token).cloned();
        if let Some(events) = events {
            events.progress(params.progress, params.total, params.message.as_deref());
        }
        std::future::ready(())
    }
}
