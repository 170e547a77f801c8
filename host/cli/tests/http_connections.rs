//! Keep-alive connections to `warden serve --http` stay honest: a client
//! that reuses a connection after an answer is either told the
//! connection is closing or finds it still open.
//!
//! The failure this guards against: an answer sent before the request's
//! body was read (a refused token, a foreign Origin, an unknown path).
//! The server cannot reuse such a connection, since the unread body is
//! still on its way, and used to close it without saying so; a client's
//! next request on it (HTTP clients pool connections) then failed with
//! "server disconnected without sending a response". Each case here sends
//! the head, reads the answer, and only then sends the body, so the
//! server has always answered before the body arrived. A body over the
//! cap is refused part way through, and its connection closed, saying so.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

#[path = "support/http_serve.rs"]
mod http_serve;

#[path = "support/mcp_fixture.rs"]
mod mcp_fixture;

const ALICE: &str = "alice-token-0123456789";

/// One answer read off a connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// The server said it closes the connection after this answer.
    closes: bool,
    body: String,
}

/// One connection, spoken to request by request.
struct Connection {
    write: TcpStream,
    read: BufReader<TcpStream>,
    authority: String,
}

impl Connection {
    fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Connection {
            read: BufReader::new(stream.try_clone().unwrap()),
            write: stream,
            authority: format!("127.0.0.1:{port}"),
        }
    }

    /// The head of a 2026-07-28 `tools/list` POST to `path`, with `extra`
    /// header lines, for a body of `length` bytes.
    fn head(&self, path: &str, extra: &str, length: usize) -> String {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Method: tools/list\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nContent-Length: {length}\r\n{extra}\r\n",
            self.authority
        )
    }

    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.write.write_all(bytes)?;
        self.write.flush()
    }

    /// The next answer; `None` when the server closed the connection
    /// without one.
    fn answer(&mut self) -> Option<Answer> {
        let mut status_line = String::new();
        if self.read.read_line(&mut status_line).ok()? == 0 {
            return None;
        }
        let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
        let (mut length, mut chunked, mut closes) = (0usize, false, false);
        loop {
            let mut line = String::new();
            self.read.read_line(&mut line).ok()?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':')?;
            let (name, value) = (name.to_ascii_lowercase(), value.trim().to_ascii_lowercase());
            match name.as_str() {
                "content-length" => length = value.parse().ok()?,
                "transfer-encoding" => chunked = value.contains("chunked"),
                "connection" => closes = value.split(',').any(|v| v.trim() == "close"),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.read.read_line(&mut size).ok()?;
                let size = usize::from_str_radix(size.trim(), 16).ok()?;
                let mut chunk = vec![0; size + 2];
                self.read.read_exact(&mut chunk).ok()?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length, 0);
            self.read.read_exact(&mut body).ok()?;
        }
        Some(Answer {
            status,
            closes,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// The server has closed its side: a read finds the end.
    fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        matches!(self.read.read_to_end(&mut rest), Ok(0))
    }
}

fn list(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

/// An authorised `tools/list` on `connection` (`after` what), answered 200
/// with its id.
fn listed(connection: &mut Connection, id: u64, after: &str) -> Answer {
    let body = list(id);
    let head = connection.head(
        "/mcp",
        &format!("Authorization: Bearer {ALICE}\r\n"),
        body.len(),
    );
    connection.send(format!("{head}{body}").as_bytes()).unwrap();
    let answer = connection.answer().unwrap_or_else(|| {
        panic!("list {id} after {after}: the server closed the connection without an answer")
    });
    assert_eq!(answer.status, 200, "list {id} after {after}: {answer:?}");
    assert!(
        answer.body.contains(&format!("\"id\":{id}")),
        "list {id} after {after}: {answer:?}"
    );
    answer
}

#[test]
fn answers_given_before_the_body_was_read_never_strand_a_reused_connection() {
    let fixture = mcp_fixture::Fixture::new();
    let port = http_serve::free_port();
    let _served = http_serve::serve(&fixture.path("warden.toml"), &fixture.path("state"), port);

    let refusals = [
        ("no token", "/mcp", String::new(), 401),
        (
            "a wrong token",
            "/mcp",
            "Authorization: Bearer wrong-token-0123456789\r\n".to_owned(),
            401,
        ),
        (
            "a foreign Origin",
            "/mcp",
            format!("Authorization: Bearer {ALICE}\r\nOrigin: http://evil.example\r\n"),
            403,
        ),
        (
            "an unknown path",
            "/nowhere",
            format!("Authorization: Bearer {ALICE}\r\n"),
            404,
        ),
        (
            "the admin API without a token",
            "/admin/rules",
            String::new(),
            401,
        ),
    ];
    for (n, (case, path, extra, status)) in refusals.into_iter().enumerate() {
        let mut connection = Connection::open(port);
        let body = list(100 + n as u64);
        let head = connection.head(path, &extra, body.len());
        connection.send(head.as_bytes()).unwrap();
        let refused = connection
            .answer()
            .unwrap_or_else(|| panic!("{case}: no answer at all"));
        assert_eq!(refused.status, status, "{case}: {refused:?}");
        if refused.closes {
            assert!(connection.closed(), "{case}: said it closes, stayed open");
            continue;
        }
        // Not told otherwise, a client reuses the connection.
        connection.send(body.as_bytes()).unwrap();
        listed(&mut connection, 200 + n as u64, case);
    }
}

#[test]
fn answered_requests_keep_their_connection_open() {
    let fixture = mcp_fixture::Fixture::new();
    let port = http_serve::free_port();
    let _served = http_serve::serve(&fixture.path("warden.toml"), &fixture.path("state"), port);
    let mut connection = Connection::open(port);
    for id in 1..=3 {
        let answer = listed(&mut connection, id, "a list");
        assert!(
            !answer.closes,
            "list {id} closed a keep-alive connection: {answer:?}"
        );
    }
}

#[test]
fn a_body_over_the_cap_is_refused_and_its_connection_closed() {
    let fixture = mcp_fixture::Fixture::new();
    let port = http_serve::free_port();
    let _served = http_serve::serve(&fixture.path("warden.toml"), &fixture.path("state"), port);
    let mut connection = Connection::open(port);
    // Over `max-body-bytes` (4 MiB by default): refused part way through.
    let length = 5 << 20;
    let head = connection.head(
        "/mcp",
        &format!("Authorization: Bearer {ALICE}\r\n"),
        length,
    );
    connection.send(head.as_bytes()).unwrap();
    let mut writer = connection.write.try_clone().unwrap();
    writer
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // The server stops reading: the rest may fail to go out, as it should.
    let sending = std::thread::spawn(move || {
        let chunk = vec![b' '; 64 << 10];
        for _ in 0..length / chunk.len() {
            if writer.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let refused = connection
        .answer()
        .unwrap_or_else(|| panic!("a body over the cap: no answer at all"));
    assert_eq!(refused.status, 413, "{refused:?}");
    assert!(
        refused.closes,
        "a body over the cap kept its connection: {refused:?}"
    );
    drop(connection);
    sending.join().unwrap();
}
