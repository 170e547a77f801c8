//! Who hears that an agent's tool list changed: legacy sessions through
//! their peer (notifications/tools/list_changed), 2026-07-28 clients
//! through their subscriptions/listen stream. Targets that went away are
//! dropped on the next send.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rmcp::RoleServer;
use rmcp::service::{Peer, SubscriptionSink};

#[derive(Clone)]
enum Target {
    Peer(Peer<RoleServer>),
    Stream(SubscriptionSink),
}

/// Listeners per agent.
#[derive(Default)]
pub(crate) struct Notifier {
    targets: Mutex<BTreeMap<String, Vec<(u64, Target)>>>,
    next: std::sync::atomic::AtomicU64,
    /// Counts list changes, so a listen stream that was acknowledged before
    /// it was registered can tell it missed one.
    changes: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier").finish_non_exhaustive()
    }
}

impl Notifier {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<(u64, Target)>>> {
        self.targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, agent: &str, target: Target) -> u64 {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock()
            .entry(agent.to_owned())
            .or_default()
            .push((id, target));
        id
    }

    /// Registers a legacy session's peer (each session registers once).
    /// Peers whose session ended are dropped first, so the list tracks
    /// live sessions.
    pub fn add_peer(&self, agent: &str, peer: &Peer<RoleServer>) {
        if let Some(list) = self.lock().get_mut(agent) {
            list.retain(|(_, t)| match t {
                Target::Peer(p) => !p.is_transport_closed(),
                Target::Stream(_) => true,
            });
        }
        self.add(agent, Target::Peer(peer.clone()));
    }

    /// Registers a subscriptions/listen stream; returns its id for removal.
    pub fn add_stream(&self, agent: &str, sink: SubscriptionSink) -> u64 {
        self.add(agent, Target::Stream(sink))
    }

    pub fn remove(&self, agent: &str, id: u64) {
        if let Some(list) = self.lock().get_mut(agent) {
            list.retain(|(i, _)| *i != id);
        }
    }

    /// The agents with at least one listener.
    pub fn agents(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(agent, _)| agent.clone())
            .collect()
    }

    /// How many list changes were announced so far.
    pub fn changes(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Tells every listener of `agent` that its tool list changed.
    pub async fn tools_changed(&self, agent: &str) {
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let targets: Vec<(u64, Target)> = match self.lock().get(agent) {
            Some(list) => list.clone(),
            None => return,
        };
        let mut gone = Vec::new();
        for (id, target) in targets {
            let ok = match target {
                Target::Peer(p) => {
                    !p.is_transport_closed() && p.notify_tool_list_changed().await.is_ok()
                }
                Target::Stream(s) => s.notify_tool_list_changed().await.is_ok(),
            };
            if !ok {
                gone.push(id);
            }
        }
        for id in gone {
            self.remove(agent, id);
        }
    }
}
