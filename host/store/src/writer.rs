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
//!
//! Callers wait as futures, not as blocked threads: on a runtime with
//! as many workers as cores, a thread parked until someone else's commit
//! ends is a core that runs no other call, and batches could then never
//! grow past the number of workers. A caller dropped while it waits
//! (a cancelled call) loses nothing: its record is committed with its
//! batch, and a writer's hand-over it received passes to the next
//! waiter. Synchronous callers (`SqliteStore::append`) drive the same future
//! on their own thread.
//!
//! A record nobody waits for (a call's outcome, whose answer may go out
//! before it is on disk) is queued with [`SqliteStore::queue_later`]: it
//! rides the next commit a waiting caller makes, so a run of calls pays
//! one commit per call, not two. Whoever queued it is told when a flush
//! must be arranged ([`SqliteStore::flush_grouped`], after a short
//! linger), so it is never left queued for long; sealing the chain,
//! reading the log and dropping the store commit it too.
//!
//! Under `durability = "normal"` every queued record is first appended
//! to the store's pending log (`pending.rs`), under the queue's lock so
//! the file's order is the queue's: a record queued is durable, and
//! [`SqliteStore::queue_later`] is how a call's decision waits for no
//! commit at all. Each commit records how far into that file its batch
//! reaches; a batch whose commit failed goes back to the head of the
//! queue, since its records were reported durable.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use tokio::sync::Notify;

use crate::chain::Entry;
use crate::pending::PendingLog;
use crate::{SqliteStore, StoreError};

/// The queue of records waiting for the next commit.
#[derive(Debug, Default)]
pub(crate) struct Group {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Records of the batch that the next writer will commit.
    queued: Vec<Entry>,
    /// That batch's outcome, shared with its callers.
    batch: Arc<Batch>,
    /// Whether a writer is committing a batch now.
    writing: bool,
    /// Whether a flush is arranged for records queued without a waiter.
    flush_due: bool,
    /// Where queued records are made durable before their commit
    /// (`durability = "normal"`).
    pending: Option<PendingLog>,
}

/// How far into a pending file a batch reaches: its name and end.
pub(crate) type Mark = (String, u64);

/// One batch as its callers see it.
#[derive(Debug, Default)]
struct Batch {
    /// The first record's sequence number, or why the commit failed;
    /// set once, when the commit ends.
    first: OnceLock<Result<u64, String>>,
    /// Wakes all of this batch's callers when it is committed, and one of
    /// them when it needs a writer.
    wake: Notify,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes queued records durable in `log` before their commit.
    pub(crate) fn set_pending(&self, log: Option<PendingLog>) {
        self.lock().pending = log;
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
    batch: Arc<Batch>,
    entries: Vec<Entry>,
    mark: Option<Mark>,
    first: Option<Result<u64, String>>,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let first = self
            .first
            .take()
            .unwrap_or_else(|| Err("the audit writer stopped before committing".to_owned()));
        // Set before `writing` is cleared, so nobody finds the queue idle
        // with this batch still unanswered.
        let _ = self.batch.first.set(first);
        let mut state = self.group.lock();
        state.writing = false;
        let next = (!state.queued.is_empty()).then(|| Arc::clone(&state.batch));
        drop(state);
        self.batch.wake.notify_waiters();
        if let Some(next) = next {
            next.wake.notify_one();
        }
    }
}

impl SqliteStore {
    /// Queues `entry`, in the pending log first when there is one; true
    /// when the log holds it (durable before its commit).
    fn enqueue(&self, state: &mut State, entry: Entry) -> Result<bool, StoreError> {
        let logged = match state.pending.as_mut() {
            Some(log) => log.write(&self.cover, &entry)?,
            None => false,
        };
        state.queued.push(entry);
        Ok(logged)
    }

    /// Appends `entry` with whatever else is queued; returns its sequence
    /// number once the commit holding it is done.
    pub(crate) async fn append_grouped(&self, entry: Entry) -> Result<u64, StoreError> {
        let (batch, index) = {
            let mut state = self.group.lock();
            self.enqueue(&mut state, entry)?;
            (Arc::clone(&state.batch), state.queued.len() as u64 - 1)
        };
        self.commit_batch(&batch).await.map(|first| first + index)
    }

    /// Queues `entry` for the next commit without waiting for it (durable
    /// on return when the store's pending log takes it). Returns true when
    /// the caller must arrange a [`SqliteStore::flush_grouped`] (none is
    /// arranged yet): else the record could stay queued until the next
    /// waiting append.
    pub(crate) fn queue_later(&self, entry: Entry) -> Result<bool, StoreError> {
        let mut state = self.group.lock();
        self.enqueue(&mut state, entry)?;
        Ok(Self::flush_to_arrange(&mut state))
    }

    /// Returns once `entry` is durable: queued behind the pending log when
    /// the store keeps one that takes it (true: the caller must arrange a
    /// [`SqliteStore::flush_grouped`]), else committed (false).
    pub(crate) async fn append_durable_grouped(&self, entry: Entry) -> Result<bool, StoreError> {
        let batch = {
            let mut state = self.group.lock();
            if self.enqueue(&mut state, entry)? {
                return Ok(Self::flush_to_arrange(&mut state));
            }
            Arc::clone(&state.batch)
        };
        self.commit_batch(&batch).await.map(|_| false)
    }

    /// Whether a flush must be arranged for what is queued (none is yet);
    /// from now on one is.
    fn flush_to_arrange(state: &mut State) -> bool {
        !std::mem::replace(&mut state.flush_due, true)
    }

    /// Commits whatever is queued now (records queued later may join);
    /// returns at once when nothing is.
    pub(crate) async fn flush_grouped(&self) -> Result<(), StoreError> {
        let batch = {
            let mut state = self.group.lock();
            state.flush_due = false;
            if state.queued.is_empty() {
                // Anything queued before is committed, or in the commit
                // running now, which ends before the connection is free.
                return Ok(());
            }
            Arc::clone(&state.batch)
        };
        self.commit_batch(&batch).await.map(|_| ())
    }

    /// Waits until `batch` (still queued or being committed) is
    /// committed, committing it when nobody is; returns its first
    /// record's sequence number.
    async fn commit_batch(&self, batch: &Arc<Batch>) -> Result<u64, StoreError> {
        let group = &self.group;
        loop {
            // Made before the lock is taken and registered under it, so
            // neither the batch's end nor a hand-over slips past unseen.
            let mut woken = pin!(batch.wake.notified());
            let write = {
                let mut state = group.lock();
                if let Some(first) = batch.first.get() {
                    return first
                        .clone()
                        .map_err(|detail| StoreError::AuditCommit { detail });
                }
                if state.writing {
                    woken.as_mut().enable();
                    None
                } else {
                    // Idle, and the batch is still queued: write it.
                    state.writing = true;
                    Some(Writing {
                        group,
                        batch: std::mem::take(&mut state.batch),
                        entries: std::mem::take(&mut state.queued),
                        mark: state.pending.as_ref().map(PendingLog::mark),
                        first: None,
                    })
                }
            };
            match write {
                None => woken.await,
                Some(mut writing) => {
                    let first = self.commit_entries(&writing.entries, writing.mark.as_ref());
                    match &first {
                        Ok(_) => self.rotate_pending(),
                        Err(_) if writing.mark.is_some() => {
                            let mut state = group.lock();
                            let mut entries = std::mem::take(&mut writing.entries);
                            entries.append(&mut state.queued);
                            state.queued = entries;
                        }
                        Err(_) => {}
                    }
                    writing.first = Some(first.map_err(|e| e.to_string()));
                }
            }
        }
    }
}

impl SqliteStore {
    /// Called by the writer after a commit: once everything in the
    /// pending file is committed and the file is large, or torn, a fresh
    /// one replaces it.
    fn rotate_pending(&self) {
        let rotated = {
            let mut state = self.group.lock();
            let idle = state.queued.is_empty();
            match state.pending.as_mut() {
                Some(log) if idle && (log.is_torn() || log.len() >= crate::pending::ROTATE_AT) => {
                    log.rotate()
                }
                _ => return,
            }
        };
        match rotated.and_then(|old| self.forget_pending(&old)) {
            Ok(()) => {}
            // The old file's records are committed: an open finds them so.
            Err(e) => tracing::warn!(error = %e, "replacing the pending audit log"),
        }
    }

    /// Commits what is queued and, when the store keeps a pending log,
    /// removes its file: the next open has nothing to recover, and
    /// records appended after this are committed before they are
    /// reported. If the commit fails, the file stays for the next open.
    pub(crate) fn retire_pending(&self) -> Result<(), StoreError> {
        let (entries, pending) = {
            let mut state = self.group.lock();
            (std::mem::take(&mut state.queued), state.pending.take())
        };
        let mark = pending.as_ref().map(PendingLog::mark);
        if !entries.is_empty()
            && let Err(e) = self.commit_entries(&entries, mark.as_ref())
        {
            let kept = if pending.is_some() {
                "kept in the pending log for the next open"
            } else {
                "lost"
            };
            tracing::error!(error = %e, records = entries.len(), "queued audit records were not committed: {kept}");
            return Err(e);
        }
        match pending {
            Some(log) => log.remove().and_then(|name| self.forget_pending(&name)),
            None => Ok(()),
        }
    }
}

impl Drop for SqliteStore {
    /// Commits the records still queued without a waiter: a host that
    /// stops loses none of them, and leaves no pending file.
    fn drop(&mut self) {
        if let Err(e) = self.retire_pending() {
            tracing::warn!(error = %e, "retiring the pending audit log");
        }
    }
}

#[cfg(test)]
impl SqliteStore {
    /// What a killed host leaves: its queued records only in its
    /// pending file, which nobody holds any more, and no commit of them.
    pub(crate) fn killed(self) {
        let mut state = self.group.lock();
        state.queued.clear();
        state.pending = None;
    }

    /// Runs `f` on the store's pending log, if it keeps one: for tests
    /// that make its file system fail.
    pub(crate) fn with_pending_log<R>(&self, f: impl FnOnce(&mut PendingLog) -> R) -> Option<R> {
        self.group.lock().pending.as_mut().map(f)
    }
}

/// Runs `future` to its end on this thread, parking while it waits: for
/// the synchronous callers of the store.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests;
