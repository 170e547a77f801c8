//! A plugin whose tools are published before its code is loaded.
//!
//! At start-up every plugin's tools are known from its signed manifest
//! (admission reads it) well before its component is compiled or read from
//! the compile cache. This backend serves that table at once. A call is
//! decided, and its decision recorded, meanwhile; it then runs only when
//! its own plugin's load has ended, on the loaded plugin: a call never
//! waits for another plugin (one it waits for that has not started loading
//! starts next), and nothing runs on code that has not passed
//! the load's checks (its `tools()` against the manifest, by the runtime).
//! A load that fails answers every call waiting on it with the reason, and
//! the host stops.

use tokio::sync::watch;
use warden_api::{
    Backend, BackendCall, BoxFuture, CallLimits, Envelope, ErrorType, HostCode, Isolation,
    Manifest, ToolSpec,
};
use warden_runtime::Plugin;

type Outcome = Option<Result<Plugin, String>>;

/// The backend registered for a plugin still loading.
pub struct Pending {
    name: String,
    tools: Vec<ToolSpec>,
    loaded: watch::Receiver<Outcome>,
    /// Asks for this plugin's load to start next.
    hurry: Box<dyn Fn() + Send + Sync>,
}

/// Says how the plugin's load ended; dropped unsaid, calls waiting are
/// told the host stopped.
pub struct Fill(watch::Sender<Outcome>);

/// A backend serving `manifest`'s tools, and what completes it; `hurry`
/// is called when a call has to wait for the load.
pub fn pending(manifest: &Manifest, hurry: impl Fn() + Send + Sync + 'static) -> (Pending, Fill) {
    let (tx, rx) = watch::channel(None);
    let backend = Pending {
        name: manifest.plugin.name.clone(),
        tools: manifest.tools.clone(),
        loaded: rx,
        hurry: Box::new(hurry),
    };
    (backend, Fill(tx))
}

impl Fill {
    /// The plugin loaded: calls waiting run on it.
    pub fn loaded(&self, plugin: Plugin) {
        self.0.send_replace(Some(Ok(plugin)));
    }

    /// The load failed: calls waiting fail with `reason`.
    pub fn failed(&self, reason: String) {
        self.0.send_replace(Some(Err(reason)));
    }
}

impl Pending {
    /// The loaded plugin, once its load has ended; or the envelope that
    /// says why there is none.
    async fn plugin(&self) -> Result<Plugin, Envelope> {
        let unavailable = |why: String| {
            Envelope::host(
                ErrorType::HostError,
                HostCode::RuntimeClosed,
                format!("plugin `{}` is not available: {why}", self.name),
            )
        };
        let mut loaded = self.loaded.clone();
        if loaded.borrow().is_none() {
            (self.hurry)();
        }
        let outcome = loaded
            .wait_for(Option::is_some)
            .await
            .map(|o| o.clone())
            .unwrap_or(None);
        match outcome {
            Some(Ok(plugin)) => Ok(plugin),
            Some(Err(reason)) => Err(unavailable(format!("its load failed: {reason}"))),
            None => Err(unavailable(
                "the host stopped before it was loaded".to_owned(),
            )),
        }
    }
}

impl Backend for Pending {
    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.clone()
    }

    fn isolation(&self) -> Isolation {
        Isolation::Wasm
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            match self.plugin().await {
                Ok(plugin) => plugin.invoke(call).await,
                Err(unavailable) => unavailable,
            }
        })
    }

    fn resource<'a>(
        &'a self,
        tool: &'a str,
        id: &'a str,
        limits: CallLimits,
    ) -> BoxFuture<'a, Envelope> {
        Box::pin(async move {
            match self.plugin().await {
                Ok(plugin) => plugin.resource(tool, id, limits).await,
                Err(unavailable) => unavailable,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            manifest_version: 1,
            wit: String::new(),
            plugin: warden_api::PluginId {
                name: "slow".into(),
                version: "1.0.0".into(),
            },
            capabilities: Default::default(),
            tools: Vec::new(),
        }
    }

    fn message(envelope: &Envelope) -> String {
        serde_json::to_value(envelope).unwrap()["message"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[tokio::test]
    async fn a_call_waits_for_the_load_and_fails_with_its_reason() {
        let hurried = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = hurried.clone();
        let (backend, fill) = pending(&manifest(), move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let waiting = tokio::spawn(async move {
            backend
                .resource("slow_tool", "doc", CallLimits::DEFAULT)
                .await
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "nothing runs before the load ends");
        assert_eq!(
            hurried.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "a waiting call asks for its plugin next"
        );
        fill.failed("`tools()` disagrees with its manifest".into());
        let answer = waiting.await.unwrap();
        assert_eq!(answer.host_code(), Some(HostCode::RuntimeClosed));
        let text = message(&answer);
        assert!(
            text.contains("`slow`") && text.contains("disagrees"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_host_that_stops_before_the_load_ends_answers_calls() {
        let (backend, fill) = pending(&manifest(), || {});
        drop(fill);
        let answer = backend
            .resource("slow_tool", "doc", CallLimits::DEFAULT)
            .await;
        assert!(message(&answer).contains("stopped"), "{answer:?}");
    }
}
