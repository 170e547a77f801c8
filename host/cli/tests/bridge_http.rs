//! The MCP bridge over Streamable HTTP, from the attacker's side: the
//! fixture MCP server (`tests/bridge-fixture --http`, a real rmcp server on
//! loopback) bridged by `warden serve --stdio`, and what must never
//! happen: a request to an address nobody named, a redirect followed, a
//! proxy from the environment used, a token sent anywhere but the server
//! or shown to the agent.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::bridged::{Bridged, envelope, fixture_binary, fx_names};

const TOKEN: &str = "fixture-bearer-token-4711";

/// The fixture serving Streamable HTTP on loopback, logging to `log`.
struct Upstream {
    child: Child,
    url: String,
    port: u16,
}

impl Upstream {
    fn start(log: &Path, bearer: Option<&str>) -> Upstream {
        let mut command = Command::new(fixture_binary());
        command
            .args(["--http", "127.0.0.1:0"])
            .env("FIXTURE_LOG", log)
            .env("FIXTURE_SECRET", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(token) = bearer {
            command.args(["--bearer", token]);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the fixture said {line:?}"))
            .to_owned();
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap();
        Upstream { child, url, port }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `[[bridge]]` entry for an HTTP server at `url`, published without
/// pins and allowed, and `extra` keys.
fn entry(url: &str, extra: &str) -> String {
    format!(
        "[[bridge]]\nname = \"fx\"\ntransport = \"http\"\nurl = \"{url}\"\n\
         category = \"external-data\"\npin = false\ndefault-decision = \"allow\"\n\
         read-only = [\"*\"]\ninit-timeout = \"5s\"\n{extra}\n"
    )
}

/// A TCP listener that counts the connections it accepts and answers each
/// with `reply`.
fn listener(reply: String) -> (u16, Arc<AtomicUsize>) {
    let socket = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        for stream in socket.incoming() {
            let Ok(mut stream) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, seen)
}

fn http_events(b: &Bridged) -> Vec<serde_json::Value> {
    b.events()
        .into_iter()
        .filter(|e| e["event"] == "http")
        .collect()
}

#[test]
fn an_http_server_is_bridged_with_its_token_and_no_proxy_and_the_token_never_shown() {
    let mut upstream = None;
    let b = Bridged::with_log(|log| {
        let u = Upstream::start(log, Some(TOKEN));
        let e = entry(
            &u.url,
            "insecure-http = true\nnetwork = { allow = [\"127.0.0.1\"] }\n\
             auth = { bearer = \"fixture\" }\ncall-timeout = \"1s\"\nmax-result-bytes = 65536\n\n\
             [secrets.fixture]\nenv = \"FIXTURE_TOKEN\"",
        );
        upstream = Some(u);
        e
    });
    let _upstream = upstream.unwrap();
    // A proxy in Warden's environment that would see every request if the
    // client honoured it.
    let (proxy, proxied) = listener("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n".into());
    let proxy_url = format!("http://127.0.0.1:{proxy}");
    let mut command = b.command();
    command.env("FIXTURE_TOKEN", TOKEN);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env(var, &proxy_url);
    }
    command.env_remove("NO_PROXY").env_remove("no_proxy");
    let mut server = support::Server::spawn(command);
    let status = b.listed();
    assert_eq!(status["state"], "ready", "{status}");
    assert_eq!(status["runtime"], "remote", "{status}");
    assert!(fx_names(&mut server, 1).contains(&"fx_echo".to_owned()));

    let echoed = server.tool(2, "fx_echo", json!({"text": "over http"}));
    assert_eq!(echoed["content"][0]["text"], "over http", "{echoed}");
    let structured = server.tool(3, "fx_structured", json!({"n": 3}));
    assert!(structured["structuredContent"].is_object(), "{structured}");

    // The server echoes the token back: the agent sees it redacted.
    let leaked = server.tool(4, "fx_echo_secret", json!({"name": "FIXTURE_SECRET"}));
    let text = leaked["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "[redacted:fixture]", "{leaked}");
    assert!(!leaked.to_string().contains(TOKEN), "{leaked}");

    // Limits hold over HTTP: a result over the cap is refused by size; an
    // event far beyond it ends the session (nothing buffers it whole) and
    // the next call opens a new one.
    let huge = envelope(&server.tool(5, "fx_huge", json!({"bytes": 100_000})));
    assert_eq!(huge["domain_code"], "output_limit", "{huge}");
    let flood = envelope(&server.tool(6, "fx_huge", json!({"bytes": 8_000_000})));
    assert_ne!(flood["status"], "ok", "{flood}");
    eprintln!("FLOOD {flood}");
    let echoed = server.tool(7, "fx_echo", json!({"text": "again"}));
    assert_eq!(echoed["content"][0]["text"], "again", "{echoed}");

    // A slow call times out, the server hears the cancel, nothing retries.
    let timed_out = envelope(&server.tool(8, "fx_slow", json!({"ms": 10_000})));
    assert_eq!(timed_out["domain_code"], "deadline_exceeded", "{timed_out}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !b.events().iter().any(|e| e["event"] == "cancelled") {
        assert!(Instant::now() < deadline, "no cancel: {:?}", b.events());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(b.calls_of("slow"), 1, "a sent call is never retried");

    // Every request went to the server itself, with the token.
    let requests = http_events(&b);
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|e| e["authorized"] == true),
        "{requests:?}"
    );
    assert_eq!(
        proxied.load(Ordering::SeqCst),
        0,
        "a request went to the proxy"
    );
    drop(server);
}

#[test]
fn an_http_server_without_the_token_it_needs_fails_clearly() {
    let mut upstream = None;
    let b = Bridged::with_log(|log| {
        let u = Upstream::start(log, Some(TOKEN));
        let e = entry(
            &u.url,
            "insecure-http = true\nnetwork = { allow = [\"127.0.0.1\"] }",
        );
        upstream = Some(u);
        e
    });
    let _upstream = upstream.unwrap();
    let _server = b.serve();
    let status = b.listed();
    assert_eq!(status["state"], "failed", "{status}");
    let problem = status["problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains("401") || problem.to_lowercase().contains("auth"),
        "{status}"
    );
}

#[test]
fn upstream_urls_on_non_public_addresses_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    let upstream = Upstream::start(&log, None);
    let port = upstream.port;
    let file = dir.path().join("warden.toml");
    let check = |toml: &str| {
        std::fs::write(&file, toml).unwrap();
        Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(["config", "check"])
            .arg(&file)
            .output()
            .unwrap()
    };
    // Every spelling of loopback, the metadata endpoint, a private address:
    // refused at load, naming the key, unless `network.allow` names it.
    for url in [
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://[::ffff:127.0.0.1]:{port}/mcp"),
        format!("http://2130706433:{port}/mcp"),
        format!("http://0x7f.1:{port}/mcp"),
        "http://169.254.169.254/latest/meta-data".to_owned(),
        "http://10.0.0.1/mcp".to_owned(),
        "http://[fd00:ec2::254]/mcp".to_owned(),
    ] {
        let out = check(&entry(&url, "insecure-http = true"));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url} was accepted");
        assert!(
            said.contains("bridge[0] (fx).url") && said.contains("blocked address"),
            "{url}: {said}"
        );
    }
    let out = check(&entry(
        &format!("http://127.0.0.1:{port}/mcp"),
        "insecure-http = true\nnetwork = { allow = [\"10.0.0.1\"] }",
    ));
    assert!(
        !out.status.success(),
        "naming another address unlocked loopback"
    );
    // Plain HTTP needs the operator's explicit word.
    let out = check(&entry("http://mcp.example.com/mcp", ""));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("insecure-http"), "{said}");
    // A stdio server's keys do not belong to an HTTP one.
    let out = check(&entry(
        "https://mcp.example.com/mcp",
        "command = [\"node\"]",
    ));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("bridge[0] (fx).command"), "{said}");
    let out = check(&entry(
        &format!("http://127.0.0.1:{port}/mcp"),
        "insecure-http = true\nnetwork = { allow = [\"127.0.0.1\"] }",
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A name is vetted where it resolves: `localhost` passes the load, and
    // the session refuses its address without sending anything.
    let b = Bridged::with(&entry(
        &format!("http://localhost:{port}/mcp"),
        "insecure-http = true",
    ));
    let _server = b.serve();
    let status = b.listed();
    assert_eq!(status["state"], "failed", "{status}");
    assert!(
        status["problem"]
            .as_str()
            .unwrap_or_default()
            .contains("blocked address"),
        "{status}"
    );
    let requests: Vec<_> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"http\""))
        .map(str::to_owned)
        .collect();
    assert!(
        requests.is_empty(),
        "requests reached the server: {requests:?}"
    );
}

#[test]
fn a_redirect_from_the_upstream_is_not_followed() {
    let mut upstream = None;
    let mut redirects = None;
    let b = Bridged::with_log(|log| {
        let u = Upstream::start(log, None);
        // A server that sends every request on to the fixture (another
        // origin, an address the bridge may reach).
        let (port, seen) = listener(format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {}\r\ncontent-length: 0\r\n\
             connection: close\r\n\r\n",
            u.url
        ));
        let e = entry(
            &format!("http://127.0.0.1:{port}/mcp"),
            "insecure-http = true\nnetwork = { allow = [\"127.0.0.1\"] }",
        );
        upstream = Some(u);
        redirects = Some(seen);
        e
    });
    let _upstream = upstream.unwrap();
    let _server = b.serve();
    let status = b.listed();
    assert_eq!(status["state"], "failed", "{status}");
    assert!(
        status["problem"]
            .as_str()
            .unwrap_or_default()
            .contains("307"),
        "{status}"
    );
    assert!(redirects.unwrap().load(Ordering::SeqCst) > 0);
    assert!(
        http_events(&b).is_empty(),
        "the redirect was followed: {:?}",
        http_events(&b)
    );
}
