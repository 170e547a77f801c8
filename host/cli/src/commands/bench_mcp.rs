//! `warden bench --mcp`: the MCP server measured from outside, as a
//! client sees it — a real `warden serve` child process, its plugins
//! installed (signed) in its registry, driven by a minimal JSON-RPC client
//! over stdio and over Streamable HTTP. Reports start-to-first-tools/list
//! (installed plugins, cached), tools/call round trips (p50/p99) for a
//! 1-byte and a 4 KiB `fs.read`, and calls per second with concurrent
//! callers.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::bench::summary;

/// Installs the benchmark's plugins into a registry under `dir/state`,
/// each signed by a key made for the run, and returns the config the
/// served host runs: that key trusted, the bench directory granted
/// read-only to installed plugins, an agent that may do everything. The
/// served host loads them as installed plugins, from the compile cache.
pub async fn install(plugins: &[&Path], dir: &Path) -> anyhow::Result<String> {
    let key = warden_signing::SecretKey::generate()?;
    let public = dir.join("bench.pub");
    std::fs::write(&public, key.public().to_text())?;
    let staged = dir.join("plugins");
    std::fs::create_dir_all(&staged)?;
    let roots = warden_signing::TrustRoots::new().publisher("bench", key.public());
    let policy = warden_registry::LoadPolicy {
        roots,
        insecure_allow_unsigned: false,
    };
    let state = dir.join("state");
    let runtime = warden_runtime::Runtime::new(
        warden_runtime::RuntimeConfig::new(Some(state.join("cache")))
            .with_cache_key(super::bench::ephemeral_cache_key()?),
    )?;
    let registry = warden_registry::Registry::open(&state, policy, runtime)?;
    for (i, p) in plugins.iter().enumerate() {
        let copy = staged.join(format!("{i}.wasm"));
        std::fs::copy(p, &copy).with_context(|| format!("copying {}", p.display()))?;
        warden_registry::sign_file(&copy, &key)?;
        let candidate = registry.prepare(&copy).await?;
        registry.check_conflicts(std::slice::from_ref(&candidate))?;
        registry.commit(&candidate)?;
    }
    Ok(format!(
        "state-dir = \"{state}\"\nworkspace = \"/workspace\"\n\
         [agents.bench]\nlevel = \"elevated\"\nmode = \"autonomous\"\n\
         [trust]\npublishers = [{{ name = \"bench\", key = \"{public}\" }}]\n\
         [plugin-grants.\"*\"]\ngrant-fs = [\"{dir}:/workspace:ro\"]\n",
        state = state.display(),
        public = public.display(),
        dir = dir.display(),
    ))
}

fn call_params(path: &str) -> Value {
    json!({"name": "fs.read", "arguments": {"path": path}})
}

fn initialize() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
           "clientInfo": {"name": "warden-bench", "version": "0"}})
}

struct Stdio_ {
    child: Child,
    input: ChildStdin,
    output: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl Stdio_ {
    /// Starts `warden serve --stdio`, initializes a session and waits for
    /// the first tools/list answer.
    async fn open(warden: &Path, config: &Path) -> anyhow::Result<Stdio_> {
        let mut child = serve(warden, config, &["--stdio"])?;
        let input = child.stdin.take().context("no stdin")?;
        let output = BufReader::new(child.stdout.take().context("no stdout")?).lines();
        let mut s = Stdio_ {
            child,
            input,
            output,
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

    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.input.write_all(line.as_bytes()).await?;
        Ok(())
    }

    async fn response(&mut self) -> anyhow::Result<Value> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), self.output.next_line())
                .await
                .context("the server did not answer within 60 s")??
                .context("the server closed its stdout")?;
            let v: Value = serde_json::from_str(&line)?;
            if v.get("id").is_some() && v.get("method").is_none() {
                if v.get("error").is_some() || v["result"]["isError"] == true {
                    bail!("the server answered with an error: {v}");
                }
                return Ok(v);
            }
        }
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> anyhow::Result<Value> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        self.response().await
    }
}

fn serve(warden: &Path, config: &Path, extra: &[&str]) -> anyhow::Result<Child> {
    Command::new(warden)
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--agent", "bench"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if extra.contains(&"--stdio") {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .kill_on_drop(true)
        .spawn()
        .context("starting warden serve")
}

/// Starts a server once and waits for its first tools/list, so the
/// plugins are in the compile cache before start-up is timed.
async fn warm(warden: &Path, config: &Path) -> anyhow::Result<()> {
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
) -> anyhow::Result<Value> {
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
    stream: BufReader<tokio::net::TcpStream>,
    authority: String,
    session: Option<String>,
}

impl Http {
    async fn connect(authority: &str) -> anyhow::Result<Http> {
        let stream = tokio::net::TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        Ok(Http {
            stream: BufReader::new(stream),
            authority: authority.to_owned(),
            session: None,
        })
    }

    /// Posts one JSON-RPC message; returns the JSON-RPC response in the
    /// reply (JSON or an SSE stream), or Null for 202 Accepted.
    async fn post(&mut self, message: &Value) -> anyhow::Result<Value> {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n",
            self.authority,
            body.len()
        );
        if let Some(s) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let response = warden_mcp::http1::read_response(&mut self.stream).await?;
        if let Some(session) = response.header("mcp-session-id") {
            self.session = Some(session.to_owned());
        }
        let (code, body) = (response.status, response.body);
        if code == 202 {
            return Ok(Value::Null);
        }
        if code != 200 {
            bail!("HTTP {code}: {}", String::from_utf8_lossy(&body));
        }
        let text = String::from_utf8_lossy(&body);
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or(text.trim());
        let v: Value = serde_json::from_str(json).with_context(|| format!("not JSON: {text}"))?;
        if v.get("error").is_some() || v["result"]["isError"] == true {
            bail!("the server answered with an error: {v}");
        }
        Ok(v)
    }

    async fn open(authority: &str) -> anyhow::Result<Http> {
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
) -> anyhow::Result<Value> {
    let started = Instant::now();
    let mut child = serve(warden, config, &["--http", "127.0.0.1:0"])?;
    let mut stderr = BufReader::new(child.stderr.take().context("no stderr")?).lines();
    let authority = loop {
        let line = tokio::time::timeout(Duration::from_secs(60), stderr.next_line())
            .await
            .context("warden serve did not report its address")??
            .context("warden serve exited")?;
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
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
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
