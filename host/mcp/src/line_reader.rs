//! Newline-delimited input read line by line within a length bound: the
//! reading half of the stdio transports Warden makes for itself (a
//! served session's, `session_transport.rs`, and a bridged server's,
//! `bridge/lines.rs`), which parse some messages more directly than
//! rmcp's transport does.
//!
//! Attack: a peer that never ends a line, or floods. A line is never held
//! past the bound: the rest of an oversized line is skipped, not
//! buffered, and reading goes on with the next line.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// One input stream, read a line at a time.
pub(crate) struct LineReader<R> {
    read: BufReader<R>,
    /// The line read so far.
    pub line: Vec<u8>,
    max_line: usize,
    /// Skipping the rest of a line that was too long.
    skipping: bool,
    /// Who sends the lines, for the log.
    peer: &'static str,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(read: R, max_line: usize, peer: &'static str) -> LineReader<R> {
        LineReader {
            read: BufReader::new(read),
            line: Vec::new(),
            max_line,
            skipping: false,
            peer,
        }
    }

    /// The next whole line (without its `\n` or `\r\n`), taken out of
    /// the reader; `None` at the end of the stream or on a read error.
    /// Cancel-safe: a line read in part stays for the next call. Hand
    /// the line back with [`LineReader::recycle`] to keep its room.
    pub async fn next_line(&mut self) -> Option<Vec<u8>> {
        self.fill_line()
            .await
            .then(|| std::mem::take(&mut self.line))
    }

    /// Keeps `line`'s room for the next line.
    pub fn recycle(&mut self, mut line: Vec<u8>) {
        line.clear();
        self.line = line;
    }

    /// Reads until `self.line` is a whole line; false at the end.
    async fn fill_line(&mut self) -> bool {
        loop {
            let (used, done) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) if !available.is_empty() => available,
                    Ok(_) => return false,
                    Err(e) => {
                        tracing::debug!(peer = self.peer, error = %e, "reading MCP input failed");
                        return false;
                    }
                };
                let end = available.iter().position(|b| *b == b'\n');
                let used = end.map_or(available.len(), |i| i + 1);
                if self.skipping {
                    self.skipping = end.is_none();
                    (used, false)
                } else if self.line.len() + used > self.max_line {
                    tracing::warn!(
                        peer = self.peer,
                        max = self.max_line,
                        "a line longer than the limit was skipped"
                    );
                    self.line.clear();
                    self.skipping = end.is_none();
                    (used, false)
                } else {
                    self.line.extend_from_slice(&available[..used]);
                    (used, end.is_some())
                }
            };
            self.read.consume(used);
            if done {
                self.line.pop();
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                return true;
            }
        }
    }
}
