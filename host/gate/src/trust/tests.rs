//! The keeper in a deployment whose store is slow for one agent (a
//! database round trip, a lock another replica holds): every other
//! agent's decisions go on.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use warden_api::{AuditEvent, JournalError, SystemClock};
use warden_policy::trust::{TrustConfig, TrustState};

use super::{Stored, TrustKeeper, TrustStore};

/// A shared store (every change written at once) whose writes for `slow`
/// wait until the test lets them through.
struct SlowStore {
    slow: &'static str,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
    kept: Mutex<BTreeMap<String, Stored>>,
}

impl TrustStore for SlowStore {
    fn load(&self, agent: &str) -> Result<Option<Stored>, JournalError> {
        Ok(self.kept.lock().unwrap().get(agent).cloned())
    }

    fn save(
        &self,
        agent: &str,
        _prior: Option<&serde_json::Value>,
        state: &TrustState,
        _events: &[AuditEvent],
    ) -> Result<Option<serde_json::Value>, JournalError> {
        if agent == self.slow {
            self.entered.lock().unwrap().send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap();
        }
        let form = serde_json::to_value(state).unwrap();
        let stored = Stored {
            state: state.clone(),
            form: form.clone(),
        };
        self.kept.lock().unwrap().insert(agent.to_owned(), stored);
        Ok(Some(form))
    }

    fn shared(&self) -> bool {
        true
    }
}

/// Weighted trust as an operator writes it (`[trust]` in `warden.toml`).
fn weighted() -> TrustConfig {
    serde_json::from_value(serde_json::json!({
        "strategy": "weighted",
        "initial-level": "sandboxed",
        "sandboxed-to-restricted": 0.4,
        "restricted-to-standard": 0.6,
        "standard-to-elevated": 0.8,
    }))
    .unwrap()
}

#[test]
fn a_slow_write_for_one_agent_holds_up_no_other_agents_decisions() {
    let (entered, in_save) = channel();
    let (let_through, release) = channel();
    let store = Arc::new(SlowStore {
        slow: "slow",
        entered: Mutex::new(entered),
        release: Mutex::new(release),
        kept: Mutex::new(BTreeMap::new()),
    });
    let keeper =
        Arc::new(TrustKeeper::load(weighted(), store, Arc::new(SystemClock), &[]).unwrap());

    let held = keeper.clone();
    let slow = std::thread::spawn(move || held.outcome("slow", "fs", true, 0.5));
    in_save
        .recv_timeout(Duration::from_secs(30))
        .expect("the slow agent's outcome reached the store");

    let other = keeper.clone();
    let (done, finished) = channel();
    std::thread::spawn(move || {
        let decided = other.refresh("other").and_then(|_| other.levels("other"));
        let recorded = other.outcome("other", "fs", true, 0.5);
        let _ = done.send((decided.is_ok(), recorded.is_ok()));
    });
    let waited = finished.recv_timeout(Duration::from_secs(10));

    let_through.send(()).unwrap();
    assert!(slow.join().unwrap().is_ok());
    assert_eq!(
        waited.expect("another agent's decision waited for the slow agent's trust write"),
        (true, true)
    );
    // Both agents' changes were kept.
    assert!(keeper.state("slow").is_ok());
    assert!(keeper.state("other").is_ok());
}
