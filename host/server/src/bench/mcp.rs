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

use super::blocking::Blocking;
use super::blocking_http::BlockingHttp;
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
         [[serve.admin-tokens]]\ntoken = \"{admin}\"\n\
         [signers]\npublishers = [{{ name = \"bench\", key = \"{public}\" }}]\n\
         [plugin-grants.\"*\"]\ngrant-fs = [\"{files}:/workspace:ro\"]\n",
        state = state.display(),
        public = public.display(),
        files = files.display(),
        admin = super::console::ADMIN_TOKEN,
    ))
}

/// `message` when it answers a request (not a notification, nor a
/// request of the server's own); an error answer is a failure.
pub(super) fn answer(message: Value) -> Result<Option<Value>, ServerError> {
    if message.get("id").is_none() || message.get("method").is_some() {
        return Ok(None);
    }
    if message.get("error").is_some() || message["result"]["isError"] == true {
        return Err(failed(format!(
            "the server answered with an error: {message}"
        )));
    }
    Ok(Some(message))
}

/// The JSON-RPC message an HTTP reply carries: its JSON body, or the
/// last `data:` line of its SSE stream.
pub(super) fn reply_message(body: &[u8]) -> Result<Value, ServerError> {
    let text = String::from_utf8_lossy(body);
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or(text.trim());
    serde_json::from_str(json).map_err(|e| failed(format!("not JSON ({e}): {text}")))
}

fn call_params(path: &str) -> Value {
    json!({"name": "fs_read", "arguments": {"path": path}})
}

pub(super) fn initialize() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
           "clientInfo": {"name": "warden-bench", "version": "0"}})
}

pub(super) struct Stdio_ {
    child: Child,
    input: ChildStdin,
    output: tokio::io::Lines<BufReader<ChildStdout>>,
    log: std::path::PathBuf,
    next_id: u64,
}

impl Stdio_ {
    /// Starts `command` (its stderr to `log`) and initializes a session;
    /// returns with the time from spawn to the answered `initialize`.
    pub(super) async fn open(
        mut command: Command,
        log: std::path::PathBuf,
    ) -> Result<(Stdio_, Duration), ServerError> {
        let stderr: Stdio = std::fs::File::create(&log)
            .map_err(io("creating the server's log"))?
            .into();
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(io("starting the server"))?;
        let input = child.stdin.take().ok_or_else(|| failed("no stdin"))?;
        let output =
            BufReader::new(child.stdout.take().ok_or_else(|| failed("no stdout"))?).lines();
        let mut s = Stdio_ {
            child,
            input,
            output,
            log,
            next_id: 0,
        };
        s.request("initialize", initialize()).await?;
        let initialize = started.elapsed();
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok((s, initialize))
    }

    /// Closes stdin and waits (at most 5 s) for the server to exit.
    pub(super) async fn close(mut self) {
        drop(self.input);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }

    pub(super) async fn send(&mut self, message: &Value) -> Result<(), ServerError> {
        let mut line = message.to_string();
        line.push('\n');
        self.input
            .write_all(line.as_bytes())
            .await
            .map_err(io("writing to the server"))
    }

    pub(super) async fn response(&mut self) -> Result<Value, ServerError> {
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
            if let Some(answer) = answer(v)? {
                return Ok(answer);
            }
        }
    }

    /// Waits for the notification `method`; how long that took.
    pub(super) async fn notice(
        &mut self,
        method: &str,
        limit: Duration,
    ) -> Result<Duration, ServerError> {
        let t = Instant::now();
        loop {
            let left = limit
                .checked_sub(t.elapsed())
                .ok_or_else(|| failed(format!("no {method} within {limit:?}")))?;
            let line = tokio::time::timeout(left, self.output.next_line())
                .await
                .map_err(|_| failed(format!("no {method} within {limit:?}")))?
                .map_err(io("reading from the server"))?
                .ok_or_else(|| failed("the server closed its stdout"))?;
            let v: Value = serde_json::from_str(&line).map_err(fail)?;
            if v["method"] == method {
                return Ok(t.elapsed());
            }
        }
    }

    /// The next response (its id and when it came), skipping
    /// notifications.
    pub(super) async fn any_response(&mut self) -> Result<(u64, Instant), ServerError> {
        let v = self.response().await?;
        Ok((v["id"].as_u64().unwrap_or_default(), Instant::now()))
    }

    /// Sends a request without waiting for its answer; its id.
    pub(super) async fn post_id(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<u64, ServerError> {
        self.post(method, params).await?;
        Ok(self.next_id)
    }

    /// Sends a request without waiting for its answer.
    pub(super) async fn post(&mut self, method: &str, params: Value) -> Result<(), ServerError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
    }

    pub(super) async fn request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Value, ServerError> {
        self.post(method, params).await?;
        self.response().await
    }

    /// One timed round trip.
    pub(super) async fn timed(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Duration, ServerError> {
        let t = Instant::now();
        self.request(method, params).await?;
        Ok(t.elapsed())
    }
}

/// `warden serve --stdio` with the bench configuration.
fn warden_stdio(warden: &Path, config: &Path) -> (std::process::Command, std::path::PathBuf) {
    let mut command = std::process::Command::new(warden);
    command
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--agent", "bench", "--stdio"]);
    (command, config.with_file_name("serve-stdio.log"))
}

/// What one kind of request measured: every sample, and each round's p50.
#[derive(Default)]
struct Series {
    samples: Vec<Duration>,
    round_p50s: Vec<Duration>,
}

impl Series {
    /// Adds a round's samples.
    fn round(&mut self, mut samples: Vec<Duration>) {
        samples.sort();
        if let Some(p50) = samples.get(samples.len() / 2) {
            self.round_p50s.push(*p50);
        }
        self.samples.extend(samples);
    }

    /// p50 as the median of the rounds' p50s; p99 and mean over all.
    fn summary(mut self) -> Value {
        self.round_p50s.sort();
        let median = self
            .round_p50s
            .get(self.round_p50s.len() / 2)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6);
        let rounds = self.round_p50s.len();
        let mut v = summary(self.samples);
        v["p50_us"] = json!(median);
        v["rounds"] = json!(rounds);
        v
    }
}

/// Rounds of interleaved round trips: each iteration times one request
/// of every kind in turn, so the kinds share the machine's conditions.
const ROUNDS: usize = 5;

/// Starts timed for the start-up figures, after one that warms the
/// caches; every other one times its first call (a start's figures swing
/// by milliseconds, so a median of a few starts says little).
const STARTS: usize = 40;

/// Longer than a served host's deferred work after its last call (its
/// outcome flush lingers 5 ms).
const SETTLE: Duration = Duration::from_millis(50);

/// Longer than a served host's busy polling after an answer (50 µs by
/// default, `[serve] busy-poll-us`).
const QUIET: Duration = Duration::from_micros(200);

/// stdio: spawn to answered initialize and to first tools/list (plugins
/// cached), round trips of `ping` (the transport floor) beside `fs_read`,
/// the same `ping` against a bare rmcp server when `floor` names one, and
/// pipelined throughput.
pub async fn stdio(
    warden: &Path,
    floor: Option<&Path>,
    config: &Path,
    postgres: Option<&Path>,
    iterations: usize,
    concurrency: usize,
) -> Result<Value, ServerError> {
    // Start-up over many starts after one that warms the compile and page
    // caches: spawn to answered initialize, to the first tools/list, and
    // to the first tools/call sent right after initialize.
    let (mut inits, mut lists, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..=STARTS {
        let (command, log) = warden_stdio(warden, config);
        let started = Instant::now();
        let (mut s, init) = Stdio_::open(command.into(), log).await?;
        if round % 2 == 0 {
            s.request("tools/list", json!({})).await?;
            lists.push(started.elapsed());
        } else {
            calls.push(s.timed("tools/call", call_params("1b.txt")).await?);
        }
        s.close().await;
        if round > 0 {
            inits.push(init);
        }
    }
    let mut results = round_trips(
        warden.to_owned(),
        floor.map(Path::to_owned),
        config.to_owned(),
        postgres.map(Path::to_owned),
        iterations,
    )
    .await?;

    // Throughput: `concurrency` requests in flight on the one stream.
    let (command, log) = warden_stdio(warden, config);
    let (mut s, _) = Stdio_::open(command.into(), log).await?;
    let total = iterations.max(concurrency);
    let t = Instant::now();
    let mut sent = 0;
    let mut done = 0;
    while sent < concurrency.min(total) {
        sent += 1;
        s.post("tools/call", call_params("4k.txt")).await?;
    }
    while done < total {
        s.response().await?;
        done += 1;
        if sent < total {
            sent += 1;
            s.post("tools/call", call_params("4k.txt")).await?;
        }
    }
    let rate = total as f64 / t.elapsed().as_secs_f64();
    s.close().await;
    results.insert(
        "start_to_initialize_ms".into(),
        json!(median_ms(&mut inits)),
    );
    results.insert(
        "start_to_initialize_p90_ms".into(),
        json!(p90_ms(&mut inits)),
    );
    results.insert(
        "start_to_first_tools_list_ms".into(),
        json!(median_ms(&mut lists[1..])),
    );
    results.insert("first_call_ms".into(), json!(median_ms(&mut calls)));
    results.insert("first_call_p90_ms".into(), json!(p90_ms(&mut calls)));
    results.insert("starts".into(), json!(STARTS));
    results.insert(
        "throughput_4k".into(),
        json!({"concurrency": concurrency, "calls": total, "calls_per_s": rate}),
    );
    Ok(Value::Object(results))
}

/// Rounds of interleaved round trips with the blocking client, on a
/// thread of their own: `ping` (the transport floor) beside `fs_read` of
/// 1 B and 4 KiB, the bare rmcp server's `ping` when `floor` names one,
/// and the 1 B read on PostgreSQL when `postgres` names its config (in
/// each round, after the others and apart from them).
async fn round_trips(
    warden: std::path::PathBuf,
    floor: Option<std::path::PathBuf>,
    config: std::path::PathBuf,
    postgres: Option<std::path::PathBuf>,
    iterations: usize,
) -> Result<serde_json::Map<String, Value>, ServerError> {
    tokio::task::spawn_blocking(move || {
        let (command, log) = warden_stdio(&warden, &config);
        let mut s = Blocking::open(command, log)?;
        let mut bare = match &floor {
            Some(path) => Some(Blocking::open(
                std::process::Command::new(path),
                config.with_file_name("floor-stdio.log"),
            )?),
            None => None,
        };
        let mut on_postgres = match &postgres {
            Some(config) => {
                let (command, log) = warden_stdio(&warden, config);
                Some(Blocking::open(command, log)?)
            }
            None => None,
        };
        let per_round = iterations.div_ceil(ROUNDS);
        let (mut ping, mut floor_ping, mut small, mut large, mut small_pg) = (
            Series::default(),
            Series::default(),
            Series::default(),
            Series::default(),
            Series::default(),
        );
        for round in 0..=ROUNDS {
            let (mut p, mut f, mut a, mut b, mut c) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            // Round 0 is the warm-up and is not kept.
            let n = if round == 0 { 50 } else { per_round };
            for _ in 0..n {
                // The bare server's ping once Warden's busy polling
                // after its last answer is over, so that it is timed as
                // with nothing else running.
                if let Some(bare) = bare.as_mut() {
                    std::thread::sleep(QUIET);
                    f.push(bare.timed("ping", json!({}))?);
                }
                p.push(s.timed("ping", json!({}))?);
                a.push(s.timed("tools/call", call_params("1b.txt"))?);
                b.push(s.timed("tools/call", call_params("4k.txt"))?);
            }
            // The PostgreSQL host's calls in a loop of their own, each
            // host idle meanwhile: interleaved call by call, one host's
            // deferred work (its outcome flush, the database server's)
            // ran during the other's round trips and slowed them.
            if let Some(pg) = on_postgres.as_mut() {
                std::thread::sleep(SETTLE);
                for _ in 0..n {
                    c.push(pg.timed("tools/call", call_params("1b.txt"))?);
                }
                std::thread::sleep(SETTLE);
            }
            if round > 0 {
                ping.round(p);
                floor_ping.round(f);
                small.round(a);
                large.round(b);
                small_pg.round(c);
            }
        }
        let mut results = serde_json::Map::new();
        if on_postgres.is_some() {
            results.insert("fs_read_1b_postgres".into(), small_pg.summary());
        }
        results.insert("ping".into(), ping.summary());
        results.insert("fs_read_1b".into(), small.summary());
        results.insert("fs_read_4k".into(), large.summary());
        if bare.is_some() {
            results.insert("bare_rmcp_ping".into(), floor_ping.summary());
        }
        Ok(results)
    })
    .await
    .map_err(|e| failed(format!("the round trips stopped: {e}")))?
}

pub(super) fn median_ms(samples: &mut [Duration]) -> f64 {
    quantile_ms(samples, 0.5)
}

/// The value 90% of `samples` do not exceed.
fn p90_ms(samples: &mut [Duration]) -> f64 {
    quantile_ms(samples, 0.9)
}

/// The sample at fraction `p` of `samples`, in ms, ranked as
/// [`super::summary`] ranks its percentiles; 0 when there are none.
fn quantile_ms(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    super::percentile(samples, p).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Rounds of interleaved round trips over HTTP with the blocking client
/// (`blocking_http.rs`), on a thread of their own: `ping` (the floor)
/// beside `fs_read` of 1 B and 4 KiB, on one keep-alive connection.
async fn http_round_trips(
    authority: String,
    iterations: usize,
) -> Result<serde_json::Map<String, Value>, ServerError> {
    tokio::task::spawn_blocking(move || {
        let mut h = BlockingHttp::open(&authority)?;
        let per_round = iterations.div_ceil(ROUNDS);
        let (mut ping, mut small, mut large) =
            (Series::default(), Series::default(), Series::default());
        for round in 0..=ROUNDS {
            let (mut p, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
            // Round 0 is the warm-up and is not kept.
            let n = if round == 0 { 50 } else { per_round };
            for _ in 0..n {
                p.push(h.timed("ping", json!({}))?);
                a.push(h.timed("tools/call", call_params("1b.txt"))?);
                b.push(h.timed("tools/call", call_params("4k.txt"))?);
            }
            if round > 0 {
                ping.round(p);
                small.round(a);
                large.round(b);
            }
        }
        let mut results = serde_json::Map::new();
        results.insert("ping".into(), ping.summary());
        results.insert("fs_read_1b".into(), small.summary());
        results.insert("fs_read_4k".into(), large.summary());
        Ok(results)
    })
    .await
    .map_err(|e| failed(format!("the HTTP round trips stopped: {e}")))?
}

/// One keep-alive HTTP/1.1 connection speaking MCP to `/mcp`.
/// An HTTP/1 connection to `authority` with Nagle off (small requests,
/// one at a time), driven on its own task.
pub(super) async fn connect(
    authority: &str,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, ServerError> {
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
    Ok(sender)
}

struct Http {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    authority: String,
    session: Option<String>,
}

impl Http {
    async fn connect(authority: &str) -> Result<Http, ServerError> {
        Ok(Http {
            sender: connect(authority).await?,
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
        let v = reply_message(&body)?;
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
    let mut child = Command::new(warden)
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--agent", "bench", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(io("starting warden serve"))?;
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
    let mut results = http_round_trips(authority.clone(), iterations).await?;
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
    // The console, over the audit trail this run wrote.
    results.insert("console".into(), super::console::figures(&authority).await?);
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
