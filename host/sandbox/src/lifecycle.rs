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
}

/// Where a call runs: in a pooled container under `key`, or per-call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub key: Option<Key>,
    pub labels: OwnerLabels,
}

/// Resolves a call's owner under the configured strategy.
pub fn place(strategy: Strategy, kind: ImageKind, context: &CallContext) -> Placement {
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
        key: owner.map(|owner| Key { kind, owner }),
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
    /// Bumped by every acquire: a grace timer that finds it changed knows
    /// the slot was used since it started.
    pub epoch: AtomicU64,
}

/// The pool of reusable containers.
#[derive(Debug, Default)]
pub struct Pool {
    slots: std::sync::Mutex<HashMap<Key, Arc<Slot>>>,
}

impl Pool {
    /// Takes a slot for a call (creating it if needed) and marks it busy.
    pub fn acquire(&self, key: &Key) -> (Arc<Slot>, u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let slot = slots.entry(key.clone()).or_default().clone();
        slot.active.fetch_add(1, Ordering::SeqCst);
        let epoch = slot.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        (slot, epoch)
    }

    /// Marks a call done; returns the epoch a grace timer should check
    /// when this was the last active call.
    pub fn release(&self, slot: &Slot) -> Option<u64> {
        let _slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        (slot.active.fetch_sub(1, Ordering::SeqCst) == 1).then(|| slot.epoch.load(Ordering::SeqCst))
    }

    /// Removes the slot from the pool if it is still idle at `epoch`
    /// (or at any epoch when `None`); returns it so the caller can remove
    /// its container.
    pub fn take_idle(&self, key: &Key, epoch: Option<u64>) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let slot = slots.get(key)?;
        let idle = slot.active.load(Ordering::SeqCst) == 0
            && epoch.is_none_or(|e| slot.epoch.load(Ordering::SeqCst) == e);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(agent: &str, task: Option<&str>) -> CallContext {
        CallContext {
            agent: agent.into(),
            session: "s".into(),
            task: task.map(Into::into),
            request_id: "r".into(),
        }
    }

    #[test]
    fn owners_resolve_per_strategy_and_fall_back_to_per_call() {
        let p = place(Strategy::PerAgent, ImageKind::Base, &ctx("alice", None));
        assert_eq!(p.key.unwrap().owner, "agent:alice");
        assert_eq!(p.labels.strategy, Strategy::PerAgent);

        let p = place(
            Strategy::PerTask,
            ImageKind::Base,
            &ctx("alice", Some("t9")),
        );
        assert_eq!(p.key.unwrap().owner, "task:t9");

        let p = place(Strategy::PerTask, ImageKind::Base, &ctx("alice", None));
        assert!(p.key.is_none(), "no task: per-call for this call");
        assert_eq!(p.labels.strategy, Strategy::PerCall);

        let p = place(Strategy::PerAgent, ImageKind::Base, &ctx("  ", None));
        assert!(p.key.is_none(), "no agent: per-call");

        let p = place(Strategy::PerCall, ImageKind::Base, &ctx("alice", Some("t")));
        assert!(p.key.is_none());
    }

    #[test]
    fn a_slot_is_idle_only_after_its_last_call_and_unused_since() {
        let pool = Pool::default();
        let key = Key {
            kind: ImageKind::Base,
            owner: "agent:a".into(),
        };
        let (s1, _) = pool.acquire(&key);
        let (s2, _) = pool.acquire(&key);
        assert!(Arc::ptr_eq(&s1, &s2), "one slot per key");
        assert_eq!(pool.release(&s1), None, "a call is still active");
        let epoch = pool.release(&s2).unwrap();
        let (s3, _) = pool.acquire(&key);
        assert_eq!(pool.release(&s3).map(|e| e > epoch), Some(true));
        assert!(pool.take_idle(&key, Some(epoch)).is_none(), "used since");
        assert!(pool.take_idle(&key, None).is_some());
        assert!(pool.keys().is_empty());
    }
}
