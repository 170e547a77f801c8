//! Lifecycle strategies: which container a call runs in, and when it goes.
//!
//! - per-agent: one warm container per (agent, image); removed once the
//!   agent has made no call for the grace period.
//! - per-task: one container per (task, image); removed by
//!   [`crate::Sandbox::end_task`], or after the grace period idle.
//! - per-call: a fresh container, removed when the call returns.
//!
//! A call whose owner cannot be resolved (no agent, or no task under
//! per-task) runs per-call, for that call only.
//!
//! A call allowed only because it reads runs in the owner's *reader*: a
//! container of its own beside the writer, with every granted directory
//! mounted read-only and no network (`warden_api::Effects::ReadOnly`).
//! Both mount the same host directories, so the reader sees every write
//! the moment it is made.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use warden_api::CallContext;

use crate::Strategy;
use crate::images::ImageKind;
use crate::spec::OwnerLabels;

/// The pool key of a reusable container.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub kind: ImageKind,
    pub owner: String,
    /// The owner's reader (read-only mounts, no network), not its writer.
    pub read_only: bool,
}

/// Where a call runs: in a pooled container under `key`, or per-call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub key: Option<Key>,
    pub labels: OwnerLabels,
}

/// Resolves a call's owner under the configured strategy.
pub fn place(
    strategy: Strategy,
    kind: ImageKind,
    read_only: bool,
    context: &CallContext,
) -> Placement {
    let agent = context.agent.trim();
    let task = context
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let owner = match strategy {
        Strategy::PerAgent if !agent.is_empty() => Some(format!("agent:{agent}")),
        Strategy::PerTask => task.map(|t| format!("task:{t}")),
        _ => None,
    };
    let effective = if owner.is_some() {
        strategy
    } else {
        Strategy::PerCall
    };
    Placement {
        key: owner.map(|owner| Key {
            kind,
            owner,
            read_only,
        }),
        labels: OwnerLabels {
            agent: agent.to_owned(),
            task: task.map(str::to_owned),
            strategy: effective,
        },
    }
}

/// One pooled container slot. `container` is filled by the first call and
/// shared by the rest: concurrent calls for one owner wait for the one
/// container being created instead of creating their own.
#[derive(Debug, Default)]
pub struct Slot {
    pub container: tokio::sync::Mutex<Option<String>>,
    pub active: AtomicUsize,
    /// When its last call ended (ms since the epoch, the sandbox's clock).
    pub idle_since_ms: AtomicU64,
}

/// The pool of reusable containers.
#[derive(Debug, Default)]
pub struct Pool {
    slots: std::sync::Mutex<HashMap<Key, Arc<Slot>>>,
}

impl Pool {
    /// Takes a slot for a call (creating it if needed) and marks it busy.
    pub fn acquire(&self, key: &Key) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let slot = slots.entry(key.clone()).or_default().clone();
        slot.active.fetch_add(1, Ordering::SeqCst);
        slot
    }

    /// Marks a call done at `now_ms` (idle from then when it was the last).
    pub fn release(&self, slot: &Slot, now_ms: u64) {
        let _slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slot.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            slot.idle_since_ms.store(now_ms, Ordering::SeqCst);
        }
    }

    /// Removes and returns every slot idle for at least `grace_ms` at
    /// `now_ms`.
    pub fn take_expired(&self, now_ms: u64, grace_ms: u64) -> Vec<(Key, Arc<Slot>)> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let expired: Vec<Key> = slots
            .iter()
            .filter(|(_, s)| {
                s.active.load(Ordering::SeqCst) == 0
                    && now_ms.saturating_sub(s.idle_since_ms.load(Ordering::SeqCst)) >= grace_ms
            })
            .map(|(k, _)| k.clone())
            .collect();
        expired
            .into_iter()
            .filter_map(|k| slots.remove(&k).map(|s| (k, s)))
            .collect()
    }

    /// Removes the slot from the pool if no call is using it; returns it
    /// so the caller can remove its container.
    pub fn take_idle(&self, key: &Key) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let slot = slots.get(key)?;
        let idle = slot.active.load(Ordering::SeqCst) == 0;
        if idle { slots.remove(key) } else { None }
    }

    /// Every slot, leaving the pool empty (shutdown).
    pub fn drain(&self) -> Vec<Arc<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.drain().map(|(_, s)| s).collect()
    }

    /// Keys of every slot, for per-task cleanup.
    pub fn keys(&self) -> Vec<Key> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.keys().cloned().collect()
    }

    /// The containers of every slot idle for `grace_ms` at `now_ms`,
    /// taken out of the pool, with their keys: for the caller to remove.
    pub async fn take_expired_containers(&self, now_ms: u64, grace_ms: u64) -> Vec<(Key, String)> {
        let mut taken = Vec::new();
        for (key, slot) in self.take_expired(now_ms, grace_ms) {
            if let Some(id) = slot.container.lock().await.take() {
                taken.push((key, id));
            }
        }
        taken
    }

    /// The containers of task `task`'s idle slots, taken out of the pool.
    pub async fn take_task_containers(&self, task: &str) -> Vec<String> {
        let owner = format!("task:{task}");
        let mut taken = Vec::new();
        for key in self.keys().into_iter().filter(|k| k.owner == owner) {
            let Some(slot) = self.take_idle(&key) else {
                continue;
            };
            if let Some(id) = slot.container.lock().await.take() {
                taken.push(id);
            }
        }
        taken
    }

    /// Every slot's container, leaving the pool empty (shutdown).
    pub async fn drain_containers(&self) -> Vec<String> {
        let mut taken = Vec::new();
        for slot in self.drain() {
            if let Some(id) = slot.container.lock().await.take() {
                taken.push(id);
            }
        }
        taken
    }
}

/// Runs `step` on the sandbox behind `sandbox` every `every`, until the
/// sandbox is dropped or `step` answers false (it is closing).
pub(crate) fn spawn_reaper<T, F, Fut>(
    sandbox: std::sync::Weak<T>,
    every: std::time::Duration,
    step: F,
) where
    T: Send + Sync + 'static,
    F: Fn(Arc<T>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(sandbox) = sandbox.upgrade() else {
                return;
            };
            if !step(sandbox).await {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(agent: &str, task: Option<&str>) -> CallContext {
        CallContext {
            principal: None,
            agent: agent.into(),
            session: "s".into(),
            task: task.map(Into::into),
            request_id: "r".into(),
        }
    }

    #[test]
    fn owners_resolve_per_strategy_and_fall_back_to_per_call() {
        let p = place(
            Strategy::PerAgent,
            ImageKind::Base,
            false,
            &ctx("alice", None),
        );
        assert_eq!(p.key.unwrap().owner, "agent:alice");
        assert_eq!(p.labels.strategy, Strategy::PerAgent);

        let p = place(
            Strategy::PerTask,
            ImageKind::Base,
            false,
            &ctx("alice", Some("t9")),
        );
        assert_eq!(p.key.unwrap().owner, "task:t9");

        let p = place(
            Strategy::PerTask,
            ImageKind::Base,
            false,
            &ctx("alice", None),
        );
        assert!(p.key.is_none(), "no task: per-call for this call");
        assert_eq!(p.labels.strategy, Strategy::PerCall);

        let p = place(Strategy::PerAgent, ImageKind::Base, false, &ctx("  ", None));
        assert!(p.key.is_none(), "no agent: per-call");

        let p = place(
            Strategy::PerCall,
            ImageKind::Base,
            false,
            &ctx("alice", Some("t")),
        );
        assert!(p.key.is_none());
    }

    #[test]
    fn an_owner_has_a_reader_apart_from_its_writer() {
        let writer = place(
            Strategy::PerAgent,
            ImageKind::Base,
            false,
            &ctx("alice", None),
        );
        let reader = place(
            Strategy::PerAgent,
            ImageKind::Base,
            true,
            &ctx("alice", None),
        );
        let (writer, reader) = (writer.key.unwrap(), reader.key.unwrap());
        assert_eq!(writer.owner, reader.owner);
        assert_ne!(writer, reader, "a read-only call never lands in the writer");
        assert!(reader.read_only && !writer.read_only);
    }

    #[test]
    fn a_slot_expires_a_grace_period_after_its_last_call_ended() {
        let pool = Pool::default();
        let key = Key {
            kind: ImageKind::Base,
            owner: "agent:a".into(),
            read_only: false,
        };
        let s1 = pool.acquire(&key);
        let s2 = pool.acquire(&key);
        assert!(Arc::ptr_eq(&s1, &s2), "one slot per key");
        pool.release(&s1, 1_000);
        assert!(
            pool.take_expired(10_000, 5_000).is_empty(),
            "a call is still active"
        );
        assert!(pool.take_idle(&key).is_none(), "a call is still active");
        pool.release(&s2, 2_000);
        assert!(pool.take_expired(6_999, 5_000).is_empty(), "idle 4.999 s");
        let s3 = pool.acquire(&key);
        pool.release(&s3, 6_000);
        assert!(
            pool.take_expired(10_999, 5_000).is_empty(),
            "used again since"
        );
        let expired = pool.take_expired(11_000, 5_000);
        assert_eq!(expired.len(), 1);
        assert!(pool.keys().is_empty());
        let s4 = pool.acquire(&key);
        pool.release(&s4, 0);
        assert!(pool.take_idle(&key).is_some());
    }
}
