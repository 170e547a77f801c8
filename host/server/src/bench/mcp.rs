//! `warden bench --mcp`: the MCP server measured from outside, as a
//! client sees it — a real `warden serve` child process, its plugins
//! installed (signed) in its registry, driven by a minimal JSON-RPC client
//! over stdio and over Streamable HTTP. Reports start-to-first-tools/list
//! (installed plugins, cached), tools/call round trips (p50/p99) for a
//! 1-byte and a 4 KiB `fs_read`, and calls per second with concurrent
//! callers.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{ephemeral_cache_key, failed, summary};
use crate::ServerError;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServerError {
    let what = what.into();
    move |e| ServerError::io(what, e)
}

fn fail(e: impl std::fmt::Display) -> ServerError {
    failed(e.to_string())
}

/// Installs the benchmark's plugins into a registry under `dir/state`,
/// each signed by a key made for the run, and returns the config the
/// served host runs: that key trusted, `files` granted read-only to
/// installed plugins, an agent that may do everything. The
/// served host loads them as installed plugins, from the compile cache.
pub async fn install(plugins: &[&Path], dir: &Path, files: &Path) -> Result<String, ServerError> {
    let key = warden_signing::SecretKey::generate().map_err(fail)?;
    let public = dir.join("bench.pub");
    std::fs::write(&public, key.public().to_text()).map_err(io("writing the bench key"))?;
    let staged = dir.join("plugins");
    std::fs::create_dir_all(&staged).map_err(io("creating the staging directory"))?;
    let roots = warden_signing::Signers::new().publisher("bench", key.public());
    let policy = warden_registry::AdmissionPolicy {
        signers: roots,
        insecure_allow_unsigned: false,
    };
    let state = dir.join("state");
    let runtime = warden_runtime::Runtime::new(
        warden_runtime::RuntimeConfig::new(Some(state.join("cache")))
            .with_cache_key(ephemeral_cache_key()?),
    )?;
    let registry = warden_registry::Registry::open(&state, policy, runtime)?;
    for (i, p) in plugins.iter().enumerate() {
        let copy = staged.join(format!("{i}.wasm"));
        std::fs::copy(p, &copy).map_err(io(format!("copying {}", p.display())))?;
        warden_registry::sign_file(&copy, &key)?;
        let candidate = registry.prepare(&copy).await?;
        registry.check_conflicts(std::slice::from_ref(&candidate))?;
        registry.commit(&candidate)?;
    }
    Ok(format!(
        "state-dir = \"{state}\"\nworkspace = \"/workspace\"\n\
         [agents.bench]\nlevel = \"elevated\"\nmode = \"autonomous\"\n\
         [signers]\npublishers = [{{ name = \"bench\", key = \"{public}\" }}]\n\
         [plugin-grants.\"*\"]\ngrant-fs = [\"{files}:/workspace:ro\"]\n",
        state = state.display(),
        public = public.display(),
        files = files.display(),
    ))
}

fn call_params(path: &str) -> Value {
    json!({"name": "fs_read", "arguments": {"path": path}})
}

fn initialize() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
           "clientInfo": {"name": "warden-bench", "version": "0"}})
}

struct Stdio_ {
    child: Child,
    input: ChildStdin,
    output: tokio::io::Lines<BufReader<ChildStdout>>,
    log: std::path::PathBuf,
}

impl Stdio_ {
    /// Starts `warden serve --stdio`, initializes a session and waits for
    /// the first tools/list answer.
    async fn open(warden: &Path, config: &Path) -> Result<Stdio_, ServerError> {
        let mut child = serve(warden, config, &["--stdio"])?;
        let input = child.stdin.take().ok_or_else(|| failed("no stdin"))?;
        let output =
            BufReader::new(child.stdout.take().ok_or_else(|| failed("no stdout"))?).lines();
        let mut s = Stdio_ {
            child,
            input,
            output,
            log: stdio_log(config),
        };
        s.request(0, "initialize", initialize()).await?;
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        s.request(1, "tools/list", json!({})).await?;
        Ok(s)
    }

    /// Closes stdin and waits (at most 5 s) for the server to exit.
    async fn close(mut self) {
        drop(self.input);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }

    async fn send(&mut self, message: &Value) -> Result<(), ServerError> {
        let mut line = message.to_string();
        line.push('\n');
        self.input
            .write_all(line.as_bytes())
            .await
            .map_err(io("writing to the server"))
    }

    async fn response(&mut self) -> Result<Value, ServerError> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), self.output.next_line())
                .await
                .map_err(|_| failed("the server did not answer within 60 s"))?
                .map_err(io("reading from the server"))?
                .ok_or_else(|| {
                    let said = std::fs::read_to_string(&self.log).unwrap_or_default();
                    failed(format!("the server closed its stdout: {}", said.trim()))
                })?;
            let v: Value = serde_json::from_str(&line).map_err(fail)?;
            if v.get("id").is_some() && v.get("method").is_none() {
                if v.get("error").is_some() || v["result"]["isError"] == true {
                    return Err(failed(format!("the server answered with an error: {v}")));
                }
                return Ok(v);
            }
        }
    }

    async fn request(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Value, ServerError> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        self.response().await
    }
}

/// Where a stdio server's stderr goes (its stdout is the protocol), so a
/// server that stops early can say why.
fn stdio_log(config: &Path) -> std::path::PathBuf {
    config.with_file_name("serve-stdio.log")
}

fn serve(warden: &Path, config: &Path, extra: &[&str]) -> Result<Child, ServerError> {
    let stderr = if extra.contains(&"--stdio") {
        std::fs::File::create(stdio_log(config))
            .map_err(io("creating the server's log"))?
            .into()
    } else {
        Stdio::piped()
    };
    Command::new(warden)
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--agent", "bench"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .map_err(io("starting warden serve"))
}

/// Starts a server once and waits for its first tools/list, so the
/// plugins are in the compile cache before start-up is timed.
async fn warm(warden: &Path, config: &Path) -> Result<(), ServerError> {
    Stdio_::open(warden, config).await?.close().await;
    Ok(())
}

/// stdio: start to first tools/list (plugins cached), round trips,
/// pipelined throughput.
pub async fn stdio(
    warden: &Path,
    config: &Path,
    iterations: usize,
    concurrency: usize,
) -> Result<Value, ServerError> {
    warm(warden, config).await?;
    let started = Instant::now();
    let mut s = Stdio_::open(warden, config).await?;
    let first_list = started.elapsed();
    let mut id = 2;
    let mut results = serde_json::Map::new();
    for (label, path) in [("fs_read_1b", "1b.txt"), ("fs_read_4k", "4k.txt")] {
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..50 {
            id += 1;
            s.request(id, "tools/call", call_params(path)).await?;
        }
        for _ in 0..iterations {
            id += 1;
            let t = Instant::now();
            s.request(id, "tools/call", call_params(path)).await?;
            samples.push(t.elapsed());
        }
        results.insert(label.into(), summary(samples));
    }
    // Throughput: `concurrency` requests in flight on the one stream.
    let total = iterations.max(concurrency);
    let t = Instant::now();
    let mut sent = 0;
    let mut done = 0;
    while sent < concurrency.min(total) {
        id += 1;
        sent += 1;
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call_params("4k.txt")}))
            .await?;
    }
    while done < total {
        s.response().await?;
        done += 1;
        if sent < total {
            id += 1;
            sent += 1;
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call_params("4k.txt")}))
                .await?;
        }
    }
    let rate = total as f64 / t.elapsed().as_secs_f64();
    s.close().await;
    results.insert(
        "start_to_first_tools_list_ms".into(),
        json!(first_list.as_secs_f64() * 1e3),
    );
    results.insert(
        "throughput_4k".into(),
        json!({"concurrency": concurrency, "calls": total, "calls_per_s": rate}),
    );
    Ok(Value::Object(results))
}

/// One keep-alive HTTP/1.1 connection speaking MCP to `/mcp`.
struct Http {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    authority: String,
    session: Option<String>,
}

impl Http {
    async fn connect(authority: &str) -> Result<Http, ServerError> {
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(io(format!("connecting to {authority}")))?;
        stream
            .set_nodelay(true)
            .map_err(io("setting TCP_NODELAY"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(fail)?;
        tokio::spawn(connection);
        Ok(Http {
            sender,
            authority: authority.to_owned(),
            session: None,
        })
    }

    /// Posts one JSON-RPC message; returns the JSON-RPC response in the
    /// reply (JSON or an SSE stream), or Null for 202 Accepted.
    async fn post(&mut self, message: &Value) -> Result<Value, ServerError> {
        let mut request = http::Request::post("/mcp")
            .header(http::header::HOST, &self.authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25");
        if let Some(s) = &self.session {
            request = request.header("Mcp-Session-Id", s);
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(fail)?;
        self.sender.ready().await.map_err(fail)?;
        let response = self.sender.send_request(request).await.map_err(fail)?;
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session = Some(session.to_owned());
        }
        let code = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(fail)?
            .to_bytes();
        if code == http::StatusCode::ACCEPTED {
            return Ok(Value::Null);
        }
        if code != http::StatusCode::OK {
            return Err(failed(format!(
                "HTTP {code}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        let text = String::from_utf8_lossy(&body);
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or(text.trim());
        let v: Value =
            serde_json::from_str(json).map_err(|e| failed(format!("not JSON ({e}): {text}")))?;
        if v.get("error").is_some() || v["result"]["isError"] == true {
            return Err(failed(format!("the server answered with an error: {v}")));
        }
        Ok(v)
    }

    async fn open(authority: &str) -> Result<Http, ServerError> {
        let mut h = Http::connect(authority).await?;
        h.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize()}))
            .await?;
        h.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(h)
    }
}

/// HTTP: start to first tools/list, round trips, throughput with one
/// session per concurrent caller.
pub async fn http(
    warden: &Path,
    config: &Path,
    iterations: usize,
    concurrency: usize,
) -> Result<Value, ServerError> {
    let started = Instant::now();
    let mut child = serve(warden, config, &["--http", "127.0.0.1:0"])?;
    let mut stderr =
        BufReader::new(child.stderr.take().ok_or_else(|| failed("no stderr"))?).lines();
    let authority = loop {
        let line = tokio::time::timeout(Duration::from_secs(60), stderr.next_line())
            .await
            .map_err(|_| failed("warden serve did not report its address"))?
            .map_err(io("reading warden serve's stderr"))?
            .ok_or_else(|| failed("warden serve exited"))?;
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.split('/').next().unwrap_or_default().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    let mut h = Http::open(&authority).await?;
    h.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .await?;
    let first_list = started.elapsed();
    let mut results = serde_json::Map::new();
    let mut id = 2;
    for (label, path) in [("fs_read_1b", "1b.txt"), ("fs_read_4k", "4k.txt")] {
        let mut samples = Vec::with_capacity(iterations);
        for i in 0..iterations + 50 {
            id += 1;
            let t = Instant::now();
            h.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call_params(path)}))
                .await?;
            if i >= 50 {
                samples.push(t.elapsed());
            }
        }
        results.insert(label.into(), summary(samples));
    }
    let per = iterations.max(concurrency) / concurrency.max(1);
    let t = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let authority = authority.clone();
        tasks.push(tokio::spawn(async move {
            let mut h = Http::open(&authority).await?;
            for i in 0..per {
                h.post(&json!({"jsonrpc": "2.0", "id": c * 100_000 + i + 1, "method": "tools/call", "params": call_params("4k.txt")}))
                    .await?;
            }
            Ok::<(), ServerError>(())
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| failed(format!("a benchmark caller failed: {e}")))??;
    }
    let rate = (per * concurrency) as f64 / t.elapsed().as_secs_f64();
    let _ = child.start_kill();
    results.insert(
        "start_to_first_tools_list_ms".into(),
        json!(first_list.as_secs_f64() * 1e3),
    );
    results.insert(
        "throughput_4k".into(),
        json!({"concurrency": concurrency, "calls": per * concurrency, "calls_per_s": rate}),
    );
    Ok(Value::Object(results))
}
