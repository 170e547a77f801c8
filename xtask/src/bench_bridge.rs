//! The MCP bridge's part of `cargo xtask bench`: `warden bench --bridge`
//! against the release fixture server, on the Docker runtime too when
//! the engine and the sandbox base image are there (the fixture image is
//! made from them, never pulled), and its section of
//! `docs/benchmarks.md`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::Value;

use crate::bench::{cell, us};

/// The image the Docker runtime's figures use.
const IMAGE: &str = "warden-bench-fixture:local";

/// The bridge bench's command line (paths relative to the root).
pub fn args(quick: bool, image: bool) -> Vec<String> {
    let mut args = vec![
        "bench".to_owned(),
        "--bridge".into(),
        "target/release/warden-bridge-fixture".into(),
        "--iterations".into(),
        if quick { "300" } else { "2000" }.into(),
    ];
    if image {
        args.extend(["--bridge-image".to_owned(), IMAGE.to_owned()]);
    }
    args
}

fn docker(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("docker")
        .args(args)
        .output()
        .context("running docker")?;
    if !out.status.success() {
        anyhow::bail!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The fixture's image: the newest sandbox base image with the release
/// fixture on its `PATH`. Why not, when it cannot be made.
fn image(root: &Path) -> Result<(), String> {
    let base = docker(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .map_err(|e| e.to_string())?
        .lines()
        .find(|l| l.starts_with("warden-sandbox-base:"))
        .map(str::to_owned)
        .ok_or("no sandbox base image (`warden sandbox build-images` makes it)")?;
    let made = (|| {
        let id = docker(&["create", "--network", "none", &base, "true"])?;
        let copied = docker(&[
            "cp",
            &root
                .join("target/release/warden-bridge-fixture")
                .display()
                .to_string(),
            &format!("{id}:/usr/local/bin/warden-bridge-fixture"),
        ])
        .and_then(|_| docker(&["commit", &id, IMAGE]));
        let _ = docker(&["rm", &id]);
        copied.map(drop)
    })();
    made.map_err(|e| e.to_string())
}

/// Runs the bridge bench; its report, with why the Docker runtime was
/// left out when it was (`docker_skipped`).
pub fn run(root: &Path, quick: bool) -> anyhow::Result<Value> {
    crate::run(
        root,
        "cargo",
        &["build", "--release", "--package", "warden-bridge-fixture"],
    )?;
    let skipped = image(root).err();
    let args = args(quick, skipped.is_none());
    let mut report = crate::bench::release_json(root, &args)?;
    if let (Some(why), Some(map)) = (skipped, report.as_object_mut()) {
        map.insert("docker_skipped".into(), Value::String(why));
    }
    Ok(report)
}

/// The bridge's section of `docs/benchmarks.md`; `prev` is the previous
/// run's report.
pub fn render(md: &mut String, b: &Value, prev: &Value) -> anyhow::Result<()> {
    writeln!(md, "## MCP bridge\n")?;
    writeln!(
        md,
        "```sh\ntarget/release/warden {}\n```\n",
        args(false, b["docker_skipped"].is_null()).join(" ")
    )?;
    writeln!(
        md,
        "A no-op `echo` of the fixture server (`tests/bridge-fixture`) \
         bridged through `warden serve --stdio`, beside the same call made \
         directly to the fixture by the same client; the overhead is the \
         difference of the p50s (targets: 150 µs on the host runtime, 300 µs \
         on the Docker runtime).\n"
    )?;
    writeln!(
        md,
        "| call | p50 µs | p99 µs | overhead p50 µs | previous overhead µs |\n|---|---|---|---|---|"
    )?;
    let direct = us(&b["direct_echo"]["p50_us"]);
    let overhead = |v: &Value| us(&v["p50_us"]).zip(direct).map(|(a, d)| a - d);
    writeln!(
        md,
        "| `echo` directly on the fixture (stdio) | {} | {} | — | — |",
        cell(direct, 1),
        cell(us(&b["direct_echo"]["p99_us"]), 1),
    )?;
    let rows = [
        ("host runtime", &b["bridged_echo"], &prev["bridged_echo"]),
        (
            "Docker runtime",
            &b["other_runtimes"]["docker"]["bridged_echo"],
            &prev["other_runtimes"]["docker"]["bridged_echo"],
        ),
        (
            "Streamable HTTP on loopback",
            &b["other_runtimes"]["http"]["bridged_echo"],
            &prev["other_runtimes"]["http"]["bridged_echo"],
        ),
    ];
    let prev_direct = us(&prev["direct_echo"]["p50_us"]);
    for (label, now, before) in rows {
        if now.is_null() {
            continue;
        }
        writeln!(
            md,
            "| through Warden, {label} | {} | {} | {} | {} |",
            cell(us(&now["p50_us"]), 1),
            cell(us(&now["p99_us"]), 1),
            cell(overhead(now), 1),
            cell(
                us(&before["p50_us"]).zip(prev_direct).map(|(a, d)| a - d),
                1
            ),
        )?;
    }
    if let Some(why) = b["docker_skipped"].as_str() {
        writeln!(md, "\nThe Docker runtime was not measured: {why}.")?;
    }
    let notice = &b["list_change_to_notice_ms"];
    writeln!(
        md,
        "\n- `ping`: the fixture {} µs, Warden {} µs (p50).\n\
         - Cold start to every bridged server published: {} ms (target 1,500 ms).\n\
         - Upstream list change to downstream `list_changed`: p50 {} ms, p95 {} ms \
         (target p95 250 ms).\n\
         - 100 calls in flight over four servers, one slow, in bursts: the median of the \
         bursts' p99 of the fast three is {}× the same beside a fast fourth (target within \
         1.1×; pooled over every burst, {}×).\n",
        cell(us(&b["direct_ping"]["p50_us"]), 1),
        cell(us(&b["warden_ping"]["p50_us"]), 1),
        cell(us(&b["cold_start_to_published_ms"]), 0),
        cell(us(&notice["p50"]), 0),
        cell(us(&notice["p95"]), 0),
        cell(us(&b["fast_p99_ratio"]), 2),
        cell(us(&b["fast_p99_ratio_pooled"]), 2),
    )?;
    Ok(())
}
