//! Work a running host does on a period: progressive trust's tick
//! (re-verification, decay, counters written to the store), and signing
//! the audit chain's head when only a tag covers it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Runs `f` every `period` (the first time one period from now) until
/// `shutdown`; a late tick is not caught up twice.
pub(crate) async fn every(period: Duration, shutdown: CancellationToken, f: impl Fn()) {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = interval.tick() => f(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// The server's trust tick fires once a period, never before the
    /// first period, and stops with the host (time is tokio's, paused).
    #[tokio::test(start_paused = true)]
    async fn ticks_once_a_period_until_shutdown() {
        let count = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        let counted = count.clone();
        let task = tokio::spawn(every(
            Duration::from_secs(10),
            shutdown.clone(),
            move || {
                counted.fetch_add(1, Ordering::SeqCst);
            },
        ));
        tokio::time::advance(Duration::from_secs(9)).await;
        tokio::task::yield_now().await;
        assert_eq!(count.load(Ordering::SeqCst), 0);
        for expected in 1..=3 {
            tokio::time::advance(Duration::from_secs(10)).await;
            tokio::task::yield_now().await;
            assert_eq!(count.load(Ordering::SeqCst), expected);
        }
        shutdown.cancel();
        task.await.unwrap();
        tokio::time::advance(Duration::from_secs(100)).await;
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }
}
