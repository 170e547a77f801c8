//! A raw MCP client over one keep-alive HTTP/1.1 connection for timed
//! round trips: buffered, blocking, on the calling thread, like
//! `blocking.rs` for stdio.
//!
//! The async hyper client the HTTP figures were first timed with ran its
//! connection on a task of a multi-threaded runtime: its own wake-ups
//! added about 140 µs to every round trip (`ping` 200 µs against 60 µs
//! with this client, same server, same machine), to the floor and to a
//! call alike, which made every call look closer to the floor than it is.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::failed;
use crate::ServerError;

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ServerError {
    move |e| ServerError::io(what, e)
}

pub(super) struct BlockingHttp {
    output: TcpStream,
    input: BufReader<TcpStream>,
    authority: String,
    session: Option<String>,
    next_id: u64,
    line: String,
}

impl BlockingHttp {
    /// Connects to `authority` (Nagle off: small requests, one at a time)
    /// and initializes a session.
    pub(super) fn open(authority: &str) -> Result<BlockingHttp, ServerError> {
        let stream = TcpStream::connect(authority).map_err(io("connecting to warden serve"))?;
        stream
            .set_nodelay(true)
            .map_err(io("setting TCP_NODELAY"))?;
        let input = BufReader::new(stream.try_clone().map_err(io("cloning the socket"))?);
        let mut client = BlockingHttp {
            output: stream,
            input,
            authority: authority.to_owned(),
            session: None,
            next_id: 0,
            line: String::new(),
        };
        client.request("initialize", super::mcp::initialize())?;
        client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    /// One timed round trip.
    pub(super) fn timed(&mut self, method: &str, params: Value) -> Result<Duration, ServerError> {
        let t = Instant::now();
        self.request(method, params)?;
        Ok(t.elapsed())
    }

    /// Sends a request; its answer (an error answer is a failure).
    pub(super) fn request(&mut self, method: &str, params: Value) -> Result<Value, ServerError> {
        self.next_id += 1;
        let id = self.next_id;
        let answer =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let answer = super::mcp::answer(answer)?
            .ok_or_else(|| failed(format!("no answer to `{method}`")))?;
        if answer["id"] != id {
            return Err(failed(format!("an answer to another request: {answer}")));
        }
        Ok(answer)
    }

    /// Posts one JSON-RPC message to `/mcp`; the last JSON-RPC message of
    /// the reply (a JSON body or an SSE stream), or Null for 202 Accepted.
    fn post(&mut self, message: &Value) -> Result<Value, ServerError> {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             Content-Length: {}\r\n",
            self.authority,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str("Mcp-Session-Id: ");
            head.push_str(session);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head.push_str(&body);
        self.output
            .write_all(head.as_bytes())
            .map_err(io("writing to warden serve"))?;
        let status = self.read_line()?;
        let code = status
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let (mut length, mut chunked) = (None, false);
        loop {
            let line = self.read_line()?;
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                self.session = Some(value.to_owned());
            }
        }
        let body = if chunked {
            self.read_chunked()?
        } else {
            self.read_exact(length.unwrap_or(0))?
        };
        match code.as_str() {
            "202" => Ok(Value::Null),
            "200" => super::mcp::reply_message(&body),
            _ => Err(failed(format!(
                "HTTP {code}: {}",
                String::from_utf8_lossy(&body)
            ))),
        }
    }

    /// One header line, without its line end.
    fn read_line(&mut self) -> Result<String, ServerError> {
        self.line.clear();
        let read = self
            .input
            .read_line(&mut self.line)
            .map_err(io("reading from warden serve"))?;
        if read == 0 {
            return Err(failed("warden serve closed the connection"));
        }
        Ok(self.line.trim_end_matches(['\r', '\n']).to_owned())
    }

    fn read_exact(&mut self, n: usize) -> Result<Vec<u8>, ServerError> {
        let mut bytes = vec![0; n];
        self.input
            .read_exact(&mut bytes)
            .map_err(io("reading from warden serve"))?;
        Ok(bytes)
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, ServerError> {
        let mut body = Vec::new();
        loop {
            let size = self.read_line()?;
            let size = usize::from_str_radix(size.split(';').next().unwrap_or_default().trim(), 16)
                .map_err(|e| failed(format!("a chunk size that is not hex ({e}): {size}")))?;
            if size == 0 {
                // Trailers (none are sent) end with an empty line.
                while !self.read_line()?.is_empty() {}
                return Ok(body);
            }
            body.extend(self.read_exact(size)?);
            self.read_line()?;
        }
    }
}
