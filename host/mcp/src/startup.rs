//! Answering before the tools are loaded: a host that is still loading
//! its plugins answers `initialize` and `ping` at once, and holds
//! `tools/list` and `tools/call` until its whole tool table is known (from
//! the signed manifests, before the code behind them is loaded), so no
//! client ever sees a partial tool list. A call then waits only for the
//! plugin it runs (that is the backend's part). A load that fails fails
//! what waited on it, with the reason.

use tokio::sync::watch;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Loading,
    /// The tool table is whole; some plugins may still be loading.
    Listed,
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
    /// The tool table is whole: listings and calls go on (each call still
    /// waits for its own plugin).
    pub fn listed(&self) {
        self.0.send_if_modified(|s| {
            let first = *s == State::Loading;
            if first {
                *s = State::Listed;
            }
            first
        });
    }

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
            let unsaid = matches!(*s, State::Loading | State::Listed);
            if unsaid {
                *s = State::Failed("the host stopped while loading its plugins".into());
            }
            unsaid
        });
    }
}

impl Startup {
    /// Waits until the tool table is whole (or the load failed: `Err` with
    /// its reason).
    pub async fn listed(&self) -> Result<(), String> {
        self.until(|s| *s != State::Loading).await
    }

    /// Waits for the whole load to end: `Err` with its reason when it
    /// failed.
    pub async fn wait(&self) -> Result<(), String> {
        self.until(|s| matches!(s, State::Ready | State::Failed(_)))
            .await
    }

    async fn until(&self, done: impl FnMut(&State) -> bool) -> Result<(), String> {
        let mut rx = self.0.clone();
        let state = rx
            .wait_for(done)
            .await
            .map(|s| s.clone())
            .unwrap_or_else(|_| State::Failed("the host stopped while loading its plugins".into()));
        match state {
            State::Failed(reason) => Err(reason),
            State::Ready | State::Listed | State::Loading => Ok(()),
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

    #[tokio::test]
    async fn a_listed_table_lets_listings_on_and_a_later_failure_still_fails_the_load() {
        let (loading, waiting) = startup();
        let whole = tokio::spawn({
            let w = waiting.clone();
            async move { w.wait().await }
        });
        loading.listed();
        assert_eq!(waiting.listed().await, Ok(()));
        tokio::task::yield_now().await;
        assert!(!whole.is_finished(), "the load has not ended");
        loading.failed("plugin `x`: tools() disagrees with its manifest".into());
        assert!(whole.await.unwrap().unwrap_err().contains("disagrees"));
        assert!(
            waiting.listed().await.is_err(),
            "a failed load fails listings"
        );

        let (loading, waiting) = startup();
        loading.listed();
        drop(loading);
        assert!(waiting.wait().await.unwrap_err().contains("stopped"));
    }
}
