//! `cargo xtask bench`: every benchmark the project has, in one run on
//! this machine, written to `docs/benchmarks.md` (and the figures it
//! compares against next time to `docs/benchmarks.json`).
//!
//! What runs: `warden bench --mcp` (release) with the bundled plugins,
//! a bare rmcp server as the transport floor of the MCP figures,
//! `warden bench --bridge` against the fixture MCP server
//! (`bench_bridge.rs`), and each crate's `cargo bench` target (their own
//! output, verbatim). The bridge's Docker runtime, the sandbox benches
//! and the toolsmith's builder run against a Docker engine and the
//! sandbox images, made here as the tests make them
//! (`scripts/ensure-docker`, `warden sandbox build-images`); a bench that
//! still fails is reported as not run, with the reason.
//!
//! Method (kept honest in `warden bench`): buffered clients, a warm-up,
//! kinds of request alternated within rounds, medians of the rounds' p50s.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::Value;

/// Each `cargo bench` target: package and bench name.
const CARGO_BENCHES: &[(&str, &str)] = &[
    ("warden-signing", "sign"),
    ("warden-store", "audit"),
    ("warden-store", "gaps"),
    ("warden-policy", "decide"),
    ("warden-policy", "grants"),
    ("warden-policy", "latency"),
    ("warden-api", "name_lookup"),
    ("warden-mcp", "approval"),
    ("warden-server", "oauth"),
    ("warden-server", "builder"),
    ("warden-runtime", "runtime"),
    ("warden-runtime", "http_hook"),
    ("warden-sandbox", "sandbox"),
    ("warden-sandbox", "git"),
    ("warden-vcs", "vcs"),
    ("warden-toolsmith", "gaps"),
];

pub fn run(root: &Path, quick: bool) -> anyhow::Result<()> {
    crate::plugins(root)?;
    crate::run(
        root,
        "cargo",
        &["build", "--release", "--package", "warden"],
    )?;
    crate::run(
        root,
        "cargo",
        &[
            "build",
            "--release",
            "--package",
            "warden-mcp",
            "--example",
            "bare_rmcp",
        ],
    )?;
    let mut warden_bench = warden_bench(root, quick)?;
    // After the MCP figures, so a starting engine is not timed beside
    // them; before the bridge's Docker runtime and the sandbox benches,
    // which run against the images.
    if !quick {
        crate::sandbox_images(root, &root.join("target/release/warden"))?;
    }
    let bridge = crate::bench_bridge::run(root, quick)?;
    if let Some(map) = warden_bench.as_object_mut() {
        map.insert("bridge".into(), bridge);
    }
    let mut cargo = Vec::new();
    for (package, bench) in CARGO_BENCHES {
        if quick && *package == "warden-sandbox" {
            continue;
        }
        cargo.push(cargo_bench(root, package, bench));
    }
    let docs = root.join("docs");
    let previous = std::fs::read_to_string(docs.join("benchmarks.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let text = render(root, &warden_bench, previous.as_ref(), &cargo)?;
    std::fs::write(docs.join("benchmarks.md"), text).context("writing docs/benchmarks.md")?;
    std::fs::write(
        docs.join("benchmarks.json"),
        serde_json::to_string_pretty(&warden_bench)? + "\n",
    )
    .context("writing docs/benchmarks.json")?;
    eprintln!("wrote docs/benchmarks.md and docs/benchmarks.json");
    Ok(())
}

/// The command line of `warden bench` as run (paths relative to the root).
fn warden_bench_args(quick: bool) -> Vec<String> {
    let dir = "plugins/target/wasm32-wasip2/release";
    let mut args = vec!["bench".to_owned()];
    for p in ["fs", "search", "http", "json"] {
        args.push("--plugin".into());
        args.push(format!("{dir}/warden_plugin_{p}.wasm"));
    }
    args.extend(
        [
            "--signers",
            &format!("{dir}/warden-dev.pub"),
            "--state-dir",
            "target/bench-state",
            "--iterations",
            if quick { "300" } else { "2000" },
            "--mcp",
            "--floor-server",
            "target/release/examples/bare_rmcp",
            "--json",
        ]
        .map(str::to_owned),
    );
    args
}

fn warden_bench(root: &Path, quick: bool) -> anyhow::Result<Value> {
    let mut args = warden_bench_args(quick);
    // A new database in the loopback cluster the tests use, for the
    // PostgreSQL host timed beside the SQLite one.
    let database = Command::new("bash")
        .arg(root.join("scripts/ensure-postgres"))
        .arg("--database")
        .current_dir(root)
        .output()
        .context("running scripts/ensure-postgres")?;
    if !database.status.success() {
        anyhow::bail!(
            "scripts/ensure-postgres failed: {}",
            String::from_utf8_lossy(&database.stderr)
        );
    }
    args.push("--postgres".into());
    args.push(String::from_utf8_lossy(&database.stdout).trim().to_owned());
    release_json(root, &args)
}

/// Runs the release `warden` with `args` (quietly, from the root); the
/// JSON it printed.
pub(crate) fn release_json(root: &Path, args: &[String]) -> anyhow::Result<Value> {
    eprintln!("+ target/release/warden {}", args.join(" "));
    let out = Command::new(root.join("target/release/warden"))
        .args(args)
        .env("WARDEN_LOG", "error")
        .current_dir(root)
        .output()
        .with_context(|| format!("running warden {}", args.join(" ")))?;
    if !out.status.success() {
        anyhow::bail!(
            "warden {} failed ({}): {}",
            args.first().map_or("", String::as_str),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("warden printed no JSON")
}

/// One `cargo bench` target's output, or why it did not run.
struct CargoBench {
    name: String,
    command: String,
    output: Result<String, String>,
}

fn cargo_bench(root: &Path, package: &str, bench: &str) -> CargoBench {
    let args = ["bench", "--package", package, "--bench", bench];
    let command = format!("cargo {}", args.join(" "));
    eprintln!("+ {command}");
    let output = Command::new("cargo")
        .args(args)
        .current_dir(root)
        .output()
        .map_err(|e| e.to_string())
        .and_then(|o| {
            if o.status.success() {
                Ok(strip_ansi(&String::from_utf8_lossy(&o.stdout)))
            } else {
                let err = String::from_utf8_lossy(&o.stderr);
                let last: Vec<&str> = err.lines().rev().take(3).collect();
                Err(last.into_iter().rev().collect::<Vec<_>>().join(" / "))
            }
        });
    CargoBench {
        name: format!("{package} / {bench}"),
        command,
        output,
    }
}

/// `text` without terminal colour sequences (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn capture(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .map_or_else(
            || "unknown".into(),
            |kb| format!("{} GiB", kb / 1024 / 1024),
        );
    format!(
        "- CPU: {model}, {} cores available\n- Memory: {memory}\n- Kernel: {}\n- Rust: {}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        capture("uname", &["-sr"]),
        capture("rustc", &["-V"]),
    )
}

pub(crate) fn us(v: &Value) -> Option<f64> {
    v.as_f64()
}

pub(crate) fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{x:.digits$}"))
}

fn render(
    root: &Path,
    r: &Value,
    previous: Option<&Value>,
    cargo: &[CargoBench],
) -> anyhow::Result<String> {
    let none = Value::Null;
    let prev = previous.unwrap_or(&none);
    let mut md = String::new();
    writeln!(md, "# Benchmarks\n")?;
    writeln!(
        md,
        "Written by `cargo xtask bench` on {} at commit `{}`; run it again to \
         refresh. Each figure is from one run on one machine: compare ratios \
         within a run, not absolute figures across machines. The previous \
         run's p50 (from `docs/benchmarks.json`) stands beside each figure.\n",
        capture("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        capture(
            "git",
            &[
                "-C",
                &root.display().to_string(),
                "rev-parse",
                "--short",
                "HEAD"
            ]
        ),
    )?;
    writeln!(md, "## Machine\n\n{}", machine())?;
    writeln!(
        md,
        "## Command\n\n```sh\ntarget/release/warden {}\n```\n",
        warden_bench_args(false).join(" ")
            + " --postgres URL (a new database: scripts/ensure-postgres --database)"
    )?;
    writeln!(
        md,
        "Release builds, `WARDEN_LOG=error`. The MCP figures come from a real \
         `warden serve` child driven by a buffered, blocking JSON-RPC client (over \
         its stdio, and over one keep-alive HTTP/1.1 connection); `ping` is \
         the transport floor no call can beat, so each call also shows as a \
         multiple of it. The bare rmcp server (`host/mcp/examples/bare_rmcp.rs`) \
         answers `ping` with nothing else running (each of its pings waits \
         until Warden is idle): Warden's own `ping` against it is Warden's \
         transport overhead.\n"
    )?;
    for transport in ["stdio", "http"] {
        let m = &r["mcp"][transport];
        if m.is_null() {
            continue;
        }
        let pm = &prev["mcp"][transport];
        writeln!(md, "## MCP over {transport}\n")?;
        writeln!(
            md,
            "| request | p50 µs | p99 µs | × ping (p50) | previous p50 µs |\n|---|---|---|---|---|"
        )?;
        let floor = us(&m["ping"]["p50_us"]).unwrap_or(f64::NAN);
        let mut rows = vec![
            ("ping", "ping"),
            ("fs_read 1 B", "fs_read_1b"),
            ("fs_read 4 KiB", "fs_read_4k"),
        ];
        if !m["bare_rmcp_ping"].is_null() {
            rows.push(("bare rmcp server: ping", "bare_rmcp_ping"));
        }
        if !m["fs_read_1b_postgres"].is_null() {
            rows.push((
                "fs_read 1 B, state in PostgreSQL (a second host, same rounds, its own loop)",
                "fs_read_1b_postgres",
            ));
        }
        for (label, key) in rows {
            let p50 = us(&m[key]["p50_us"]);
            writeln!(
                md,
                "| {label} | {} | {} | {} | {} |",
                cell(p50, 1),
                cell(us(&m[key]["p99_us"]), 1),
                cell(p50.map(|p| p / floor), 2),
                cell(us(&pm[key]["p50_us"]), 1),
            )?;
        }
        writeln!(md)?;
        let alone = &r["runtime_alone"];
        let with_alone = |key: &str| us(&alone[key]["p50_us"]).map(|a| floor + a);
        writeln!(
            md,
            "`ping` plus the runtime alone (a fresh instance, the guest and the \
             drop, with no policy, audit or MCP; see the gate in process below): \
             fs_read 1 B {} µs ({}× ping), 4 KiB {} µs ({}× ping), against \
             targets of 2× and 2.5×. A served host makes each call's instance \
             ahead and drops it after the answer, so part of this can be off \
             the call's path.\n",
            cell(with_alone("fs_read_1b"), 1),
            cell(with_alone("fs_read_1b").map(|l| l / floor), 2),
            cell(with_alone("fs_read_4k"), 1),
            cell(with_alone("fs_read_4k").map(|l| l / floor), 2),
        )?;
        // Over HTTP only the first `tools/list` of one start is timed.
        let over = match m["starts"].as_u64() {
            Some(n) => format!("over {n} starts (every other one times its first call)"),
            None => "of one start".to_owned(),
        };
        writeln!(
            md,
            "Start-up {over}:\n\n\
             | start-up | p50 ms | p90 ms | previous p50 ms |\n|---|---|---|---|"
        )?;
        for (label, key, p90) in [
            (
                "spawn to answered `initialize`",
                "start_to_initialize_ms",
                Some("start_to_initialize_p90_ms"),
            ),
            (
                "spawn to first `tools/list`",
                "start_to_first_tools_list_ms",
                None,
            ),
            (
                "first `tools/call`, sent right after `initialize`",
                "first_call_ms",
                Some("first_call_p90_ms"),
            ),
        ] {
            if m[key].is_null() {
                continue;
            }
            writeln!(
                md,
                "| {label} | {} | {} | {} |",
                cell(us(&m[key]), 1),
                cell(p90.and_then(|k| us(&m[k])), 1),
                cell(us(&pm[key]), 1)
            )?;
        }
        let t = &m["throughput_4k"];
        writeln!(
            md,
            "\n{} concurrent callers, fs_read 4 KiB: **{} calls/s** (previous: {}).\n",
            t["concurrency"],
            cell(us(&t["calls_per_s"]), 0),
            cell(us(&pm["throughput_4k"]["calls_per_s"]), 0),
        )?;
    }
    if !r["bridge"].is_null() {
        crate::bench_bridge::render(&mut md, &r["bridge"], &prev["bridge"])?;
    }
    writeln!(md, "## The gate in process\n")?;
    writeln!(
        md,
        "The same plugins called through the gate with no transport: what a \
         call costs inside Warden, without durable hooks and with a state \
         database as a served host keeps one (the decision durable in the \
         pending audit log before the tool runs, both records committed in \
         batches, the grants read).\n"
    )?;
    writeln!(
        md,
        "| call | p50 µs | p99 µs | previous p50 µs |\n|---|---|---|---|"
    )?;
    for (label, at) in [
        ("fs_read 1 B", "/fs_read_1b"),
        ("fs_read 4 KiB", "/fs_read_4k"),
        ("fs_read 1 B, with a state database", "/fs_read_1b_audited"),
        (
            "fs_read 1 B, the runtime alone (no gate)",
            "/runtime_alone/fs_read_1b",
        ),
        (
            "fs_read 4 KiB, the runtime alone (no gate)",
            "/runtime_alone/fs_read_4k",
        ),
    ] {
        let figure = |v: &Value, which: &str| v.pointer(at).and_then(|f| us(&f[which]));
        writeln!(
            md,
            "| {label} | {} | {} | {} |",
            cell(figure(r, "p50_us"), 1),
            cell(figure(r, "p99_us"), 1),
            cell(figure(prev, "p50_us"), 1),
        )?;
    }
    for (label, d) in r["decisions"].as_object().into_iter().flatten() {
        writeln!(
            md,
            "| policy decision, 1,000 rules, {label} specifier | {} | {} | {} |",
            cell(us(&d["p50_us"]), 2),
            cell(us(&d["p99_us"]), 2),
            cell(us(&prev["decisions"][label]["p50_us"]), 2),
        )?;
    }
    writeln!(
        md,
        "\n{} concurrent callers: **{} calls/s** (previous: {}).\n",
        r["throughput"]["concurrency"],
        cell(us(&r["throughput"]["calls_per_sec"]), 0),
        cell(us(&prev["throughput"]["calls_per_sec"]), 0),
    )?;
    writeln!(
        md,
        "| plugin load | compile ms | cached p50 ms | signature check p50 µs |\n|---|---|---|---|"
    )?;
    for l in r["loads"].as_array().into_iter().flatten() {
        let name = l["plugin"].as_str().unwrap_or_default();
        let name = name.rsplit('/').next().unwrap_or(name);
        writeln!(
            md,
            "| {name} | {} | {} | {} |",
            cell(us(&l["compile_ms"]), 1),
            cell(us(&l["cached_load"]["p50_us"]).map(|u| u / 1e3), 2),
            cell(us(&l["verify"]["p50_us"]), 0),
        )?;
    }
    let g = &r["search_grep_10k_files"];
    if !g.is_null() {
        writeln!(
            md,
            "\n`search_grep` over 10,000 files: p50 {} ms without the denied-path \
             check, {} ms with it ({}%).",
            cell(us(&g["without_check"]["p50_us"]).map(|u| u / 1e3), 1),
            cell(us(&g["with_check"]["p50_us"]).map(|u| u / 1e3), 1),
            cell(us(&g["overhead_pct"]), 1),
        )?;
    }
    writeln!(md, "\n## Crate benchmarks\n")?;
    writeln!(
        md,
        "Each crate's own `cargo bench` target, its output as printed.\n"
    )?;
    for b in cargo {
        writeln!(md, "### {}\n\n`{}`\n", b.name, b.command)?;
        match &b.output {
            Ok(text) => writeln!(md, "```text\n{}\n```\n", text.trim_end())?,
            Err(why) => writeln!(md, "Not run: {why}\n")?,
        }
    }
    Ok(md)
}
