//! A raw JSON-RPC client over a child's stdin and stdout for timed round
//! trips: buffered, blocking, on the calling thread, with no SDK and no
//! async runtime between the measurement and the pipe.
//!
//! An async client on a multi-threaded runtime adds its own thread
//! wake-ups to every round trip (the reader's task woken on one worker,
//! the timing task on another), to the floor and to a call alike, which
//! hides what the server itself costs. Round trips are timed with this
//! client; start-up and pipelined throughput keep the async one.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::failed;
use crate::ServerError;

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ServerError {
    move |e| ServerError::io(what, e)
}

pub(super) struct Blocking {
    child: Child,
    /// Taken (closed) when the client is dropped.
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    log: PathBuf,
    next_id: u64,
    line: String,
}

impl Blocking {
    /// Starts `command` (its stderr to `log`) and initializes a session.
    pub(super) fn open(mut command: Command, log: PathBuf) -> Result<Blocking, ServerError> {
        let stderr: Stdio = std::fs::File::create(&log)
            .map_err(io("creating the server's log"))?
            .into();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(io("starting the server"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(failed("the server's pipes were not opened"));
        };
        let mut client = Blocking {
            child,
            input: Some(input),
            output: BufReader::new(output),
            log,
            next_id: 0,
            line: String::new(),
        };
        client.request("initialize", super::mcp::initialize())?;
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    fn send(&mut self, message: &Value) -> Result<(), ServerError> {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| failed("the client is closed"))?;
        input
            .write_all(&bytes)
            .and_then(|()| input.flush())
            .map_err(io("writing to the server"))
    }

    /// Sends a request and reads up to its answer (notifications before
    /// it are skipped); an error answer is a failure.
    pub(super) fn request(&mut self, method: &str, params: Value) -> Result<Value, ServerError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            self.line.clear();
            let read = self
                .output
                .read_line(&mut self.line)
                .map_err(io("reading from the server"))?;
            if read == 0 {
                let said = std::fs::read_to_string(&self.log).unwrap_or_default();
                return Err(failed(format!(
                    "the server closed its stdout: {}",
                    said.trim()
                )));
            }
            let v: Value = serde_json::from_str(&self.line)
                .map_err(|e| failed(format!("the server wrote a line that is not JSON: {e}")))?;
            let Some(v) = super::mcp::answer(v)? else {
                continue;
            };
            if v["id"] != id {
                return Err(failed(format!("an answer to another request: {v}")));
            }
            return Ok(v);
        }
    }

    /// One timed round trip.
    pub(super) fn timed(&mut self, method: &str, params: Value) -> Result<Duration, ServerError> {
        let t = Instant::now();
        self.request(method, params)?;
        Ok(t.elapsed())
    }
}

impl Drop for Blocking {
    /// Closes stdin and waits (at most 5 s) for the server to exit, then
    /// kills it.
    fn drop(&mut self) {
        // A closed stdin ends the session.
        drop(self.input.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
