//! Answering before the tools are loaded: a host that is still loading
//! its plugins answers `initialize` and `ping` at once, and holds
//! `tools/list` and `tools/call` until the load ends, so no client ever
//! sees a partial tool list. A load that fails fails what waited on it,
//! with the reason.

use tokio::sync::watch;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Loading,
    Ready,
    Failed(String),
}

/// The loading side: says once how the load ended.
#[derive(Debug)]
pub struct Loading(watch::Sender<State>);

/// The waiting side. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Startup(watch::Receiver<State>);

/// A load in progress and what waits for it.
pub fn startup() -> (Loading, Startup) {
    let (tx, rx) = watch::channel(State::Loading);
    (Loading(tx), Startup(rx))
}

impl Loading {
    /// The tools are loaded: everything waiting goes on.
    pub fn ready(self) {
        self.0.send_replace(State::Ready);
    }

    /// The load failed: everything waiting fails with `reason`.
    pub fn failed(self, reason: String) {
        self.0.send_replace(State::Failed(reason));
    }
}

impl Drop for Loading {
    fn drop(&mut self) {
        self.0.send_if_modified(|s| {
            let unsaid = *s == State::Loading;
            if unsaid {
                *s = State::Failed("the host stopped while loading its plugins".into());
            }
            unsaid
        });
    }
}

impl Startup {
    /// Waits for the load to end: `Err` with its reason when it failed.
    pub async fn wait(&self) -> Result<(), String> {
        let mut rx = self.0.clone();
        let state = rx
            .wait_for(|s| *s != State::Loading)
            .await
            .map(|s| s.clone())
            .unwrap_or_else(|_| State::Failed("the host stopped while loading its plugins".into()));
        match state {
            State::Failed(reason) => Err(reason),
            State::Ready | State::Loading => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_go_on_when_loaded_and_fail_with_the_reason() {
        let (loading, waiting) = startup();
        let waiter = tokio::spawn({
            let w = waiting.clone();
            async move { w.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        loading.ready();
        assert_eq!(waiter.await.unwrap(), Ok(()));
        assert_eq!(waiting.wait().await, Ok(()));

        let (loading, waiting) = startup();
        loading.failed("plugin `x`: bad signature".into());
        assert_eq!(
            waiting.wait().await,
            Err("plugin `x`: bad signature".into())
        );

        let (loading, waiting) = startup();
        drop(loading);
        assert!(waiting.wait().await.unwrap_err().contains("stopped"));
    }
}
