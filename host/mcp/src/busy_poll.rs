//! Busy polling of a connection for a moment after it answered.
//!
//! A client that calls tools in a loop sends its next request right
//! after it read the last answer. The thread serving its connection has
//! by then gone to sleep in the reactor, and its core to idle; the
//! request must wake both. On a virtual machine whose idle cores halt
//! without polling (this project's two-core one among them) that wake
//! costs tens of microseconds, as long as the rest of a small call.
//!
//! So a connection that has just written an answer keeps its thread
//! awake for a short window ([`BusyPoll::new`]'s `window`, the
//! `[serve] busy-poll-us` setting): a read that finds nothing yields to
//! the runtime instead of waiting for readiness, and the runtime looks
//! at the reactor again (without sleeping) before it comes back. A
//! request arriving within the window is read at once; after it the
//! connection waits as before. This is the trade Linux's `SO_BUSY_POLL`
//! and Go's spinning scheduler threads make: at most `window` of CPU per
//! answer, spent only on a connection that just answered, never on an
//! idle one. A window of zero turns it off.
//!
//! Other tasks of the thread (other connections of an HTTP worker, the
//! work a call deferred until its answer was out) run between the
//! yields, so a polling connection delays nobody.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `io`, polled busily for `window` after each write.
pub(crate) struct BusyPoll<T> {
    io: T,
    window: Duration,
    /// When the last write went out, while its window lasts.
    answered: Option<Instant>,
    /// The task waiting to read, woken by a write so that it polls.
    reader: Option<Waker>,
    /// The yield a polling read waits on.
    yielding: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<T> BusyPoll<T> {
    pub(crate) fn new(io: T, window: Duration) -> BusyPoll<T> {
        BusyPoll {
            io,
            window,
            answered: None,
            reader: None,
            yielding: None,
        }
    }

    /// Whether a read that found nothing should poll again rather than
    /// wait: the last write is recent.
    fn polling(&mut self) -> bool {
        match self.answered {
            Some(at) if at.elapsed() < self.window => true,
            Some(_) => {
                self.answered = None;
                false
            }
            None => false,
        }
    }

    /// Notes a write's outcome: an answer (or part of one) that went out
    /// starts its window, and a reader waiting (not already polling)
    /// starts polling.
    fn wrote(&mut self, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if self.window.is_zero() || !matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            return written;
        }
        let now = Instant::now();
        let started = self
            .answered
            .is_none_or(|at| now.duration_since(at) >= self.window);
        self.answered = Some(now);
        if started && let Some(reader) = &self.reader {
            reader.wake_by_ref();
        }
        written
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for BusyPoll<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if let Poll::Ready(read) = Pin::new(&mut this.io).poll_read(cx, buf) {
                this.yielding = None;
                return Poll::Ready(read);
            }
            if !this.window.is_zero()
                && !this
                    .reader
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
            {
                this.reader = Some(cx.waker().clone());
            }
            if !this.polling() {
                this.yielding = None;
                return Poll::Pending;
            }
            let yielding = this
                .yielding
                .get_or_insert_with(|| Box::pin(tokio::task::yield_now()));
            match yielding.as_mut().poll(cx) {
                // Back after the runtime looked at the reactor: read again.
                Poll::Ready(()) => this.yielding = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for BusyPoll<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::task::JoinHandle;

    use super::*;

    const WINDOW: Duration = Duration::from_millis(20);

    /// A read of `io`, spawned, whose polls are counted.
    fn counted_read<T: AsyncRead + Unpin + Send + 'static>(
        mut io: T,
    ) -> (Arc<AtomicUsize>, JoinHandle<io::Result<Vec<u8>>>) {
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&polls);
        let reading = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            let mut read = ReadBuf::new(&mut buf);
            std::future::poll_fn(|cx| {
                counted.fetch_add(1, Ordering::Relaxed);
                Pin::new(&mut io).poll_read(cx, &mut read)
            })
            .await?;
            Ok(read.filled().to_vec())
        });
        (polls, reading)
    }

    async fn polls_after(polls: &AtomicUsize, wait: Duration) -> usize {
        tokio::time::sleep(wait).await;
        polls.load(Ordering::Relaxed)
    }

    async fn request(far: &mut DuplexStream) {
        let sent = far.write_all(b"request").await;
        assert!(sent.is_ok(), "{sent:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn after_an_answer_a_read_polls_for_the_window_then_waits() -> anyhow::Result<()> {
        let (near, mut far) = tokio::io::duplex(64);
        let mut io = BusyPoll::new(near, WINDOW);
        io.write_all(b"answer").await?;
        let (polls, reading) = counted_read(io);
        let during = polls_after(&polls, WINDOW * 2).await;
        let after = polls_after(&polls, WINDOW * 2).await;
        assert!(during > 10, "polled {during} times in the window");
        assert_eq!(after, during, "still polling after the window");
        request(&mut far).await;
        assert_eq!(reading.await??, b"request");
        Ok(())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_window_of_zero_never_polls() -> anyhow::Result<()> {
        let (near, mut far) = tokio::io::duplex(64);
        let mut io = BusyPoll::new(near, Duration::ZERO);
        io.write_all(b"answer").await?;
        let (polls, reading) = counted_read(io);
        assert_eq!(polls_after(&polls, WINDOW).await, 1);
        request(&mut far).await;
        assert_eq!(reading.await??, b"request");
        Ok(())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_waiting_reader_starts_polling_when_the_answer_goes_out() -> anyhow::Result<()> {
        let (near, mut far) = tokio::io::duplex(64);
        let (read, mut write) = tokio::io::split(BusyPoll::new(near, WINDOW));
        let (polls, reading) = counted_read(read);
        let idle = polls_after(&polls, WINDOW).await;
        assert!(idle <= 2, "polled {idle} times before any answer");
        write.write_all(b"answer").await?;
        let busy = polls_after(&polls, WINDOW / 2).await;
        assert!(busy > idle + 5, "polled {busy} times after the answer");
        let mut answer = [0u8; 6];
        far.read_exact(&mut answer).await?;
        request(&mut far).await;
        assert_eq!(reading.await??, b"request");
        Ok(())
    }
}
