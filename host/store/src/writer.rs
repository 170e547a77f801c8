//! Group commit of audit records: one writer at a time, whole batches.
//!
//! A caller queues its record and then either waits or, when no commit
//! is running, becomes the writer: it takes every queued record (its own
//! and any that arrived while the previous commit ran), appends them in
//! one transaction whose last record is signed, commits with the
//! configured durability, and wakes the callers of that batch. Nobody
//! waits for a timer: a caller alone commits at once, and batches form
//! only from records that queued up behind a running commit. A caller
//! returns only once the commit holding its record succeeded, so "audit
//! returned" still means "durable", and a decision is on record before
//! the tool runs.
//!
//! The writer is whichever caller finds the queue idle, not a thread of
//! its own: a caller alone pays no hand-over to another thread, and
//! appends keep the one connection the rest of the store uses.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::chain::Entry;
use crate::{Store, StoreError};

/// The queue of records waiting for the next commit.
#[derive(Debug, Default)]
pub(crate) struct Group {
    state: Mutex<State>,
    /// Callers of batch `n` wait on `wake[n % 2]`. Only two batches have
    /// waiting callers, the one being written and the one queueing, so a
    /// finished commit wakes its own callers and one caller of the next
    /// batch to write it, not everyone (on two cores, every needless
    /// wake-up is time the writer does not get).
    wake: [Condvar; 2],
}

#[derive(Debug, Default)]
struct State {
    /// Records of the batch that the next writer will commit.
    queued: Vec<Entry>,
    /// The number of that batch.
    batch: u64,
    /// Whether a writer is committing a batch now.
    writing: bool,
    /// Outcomes of committed batches whose callers have not all read them.
    outcomes: HashMap<u64, Outcome>,
}

#[derive(Debug)]
struct Outcome {
    /// The first record's sequence number, or why the commit failed.
    first: Result<u64, String>,
    /// Callers of the batch who have not read it yet.
    unread: usize,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records waiting for a writer, and whether one is writing: for
    /// tests that build a batch.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> (usize, bool) {
        let state = self.lock();
        (state.queued.len(), state.writing)
    }
}

/// The writer's hold on a batch: whatever happens to the writer, the
/// batch's callers get an outcome and the queue gets a new writer.
struct Writing<'a> {
    group: &'a Group,
    batch: u64,
    callers: usize,
    first: Option<Result<u64, String>>,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let first = self
            .first
            .take()
            .unwrap_or_else(|| Err("the audit writer stopped before committing".to_owned()));
        let mut state = self.group.lock();
        state.outcomes.insert(
            self.batch,
            Outcome {
                first,
                unread: self.callers,
            },
        );
        state.writing = false;
        let waiting = !state.queued.is_empty();
        drop(state);
        self.group.wake[parity(self.batch)].notify_all();
        if waiting {
            self.group.wake[parity(self.batch + 1)].notify_one();
        }
    }
}

fn parity(batch: u64) -> usize {
    usize::from(batch % 2 == 1)
}

impl Store {
    /// Appends `entry` with whatever else is queued; returns its sequence
    /// number once the commit holding it is done.
    pub(crate) fn append_grouped(&self, entry: Entry) -> Result<u64, StoreError> {
        let group = &self.group;
        let mut state = group.lock();
        let batch = state.batch;
        let index = state.queued.len() as u64;
        state.queued.push(entry);
        loop {
            if let Some(outcome) = state.outcomes.get_mut(&batch) {
                outcome.unread = outcome.unread.saturating_sub(1);
                let first = outcome.first.clone();
                if outcome.unread == 0 {
                    state.outcomes.remove(&batch);
                }
                return first
                    .map(|first| first + index)
                    .map_err(|detail| StoreError::AuditCommit { detail });
            }
            if state.writing {
                state = group.wake[parity(batch)]
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Idle, and our record is still queued: write this batch.
            let entries = std::mem::take(&mut state.queued);
            let mut writing = Writing {
                group,
                batch: state.batch,
                callers: entries.len(),
                first: None,
            };
            state.batch += 1;
            state.writing = true;
            drop(state);
            writing.first = Some(self.commit_entries(&entries).map_err(|e| e.to_string()));
            drop(writing);
            state = group.lock();
        }
    }
}

#[cfg(test)]
mod tests;
