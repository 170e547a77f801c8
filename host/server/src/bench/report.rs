//! The figures of `warden bench` as text, one line each.

use serde_json::Value;

/// The report as people read it.
pub fn render(r: &Value) -> String {
    let mut out = String::new();
    for l in r["loads"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "load {}: compile {:.1} ms, cached p50 {:.2} ms (p99 {:.2} ms), verify p50 {:.0} us (p99 {:.0} us)\n",
            l["plugin"].as_str().unwrap_or_default(),
            l["compile_ms"].as_f64().unwrap_or_default(),
            l["cached_load"]["p50_us"].as_f64().unwrap_or_default() / 1e3,
            l["cached_load"]["p99_us"].as_f64().unwrap_or_default() / 1e3,
            l["verify"]["p50_us"].as_f64().unwrap_or_default(),
            l["verify"]["p99_us"].as_f64().unwrap_or_default(),
        ));
    }
    let f = &r["fs_read_4k"];
    out.push_str(&format!(
        "fs_read 4 KiB through the gate: p50 {:.1} us, p99 {:.1} us, mean {:.1} us (n={})\n",
        f["p50_us"].as_f64().unwrap_or_default(),
        f["p99_us"].as_f64().unwrap_or_default(),
        f["mean_us"].as_f64().unwrap_or_default(),
        f["n"]
    ));
    let f = &r["fs_read_1b"];
    out.push_str(&format!(
        "fs_read 1 B through the gate: p50 {:.1} us, p99 {:.1} us\n",
        f["p50_us"].as_f64().unwrap_or_default(),
        f["p99_us"].as_f64().unwrap_or_default(),
    ));
    let f = &r["fs_read_1b_audited"];
    out.push_str(&format!(
        "fs_read 1 B through the gate with a state database (audit, grants): p50 {:.1} us, p99 {:.1} us\n",
        f["p50_us"].as_f64().unwrap_or_default(),
        f["p99_us"].as_f64().unwrap_or_default(),
    ));
    for (key, what) in [("fs_read_1b", "1 B"), ("fs_read_4k", "4 KiB")] {
        let f = &r["runtime_alone"][key];
        out.push_str(&format!(
            "fs_read {what}, the runtime alone (a fresh instance, the guest, the drop; no gate): p50 {:.1} us, p99 {:.1} us\n",
            f["p50_us"].as_f64().unwrap_or_default(),
            f["p99_us"].as_f64().unwrap_or_default(),
        ));
    }
    for (label, d) in r["decisions"].as_object().into_iter().flatten() {
        out.push_str(&format!(
            "policy decision, 1,000 rules, {label} specifier: p50 {:.2} us, p99 {:.2} us\n",
            d["p50_us"].as_f64().unwrap_or_default(),
            d["p99_us"].as_f64().unwrap_or_default(),
        ));
    }
    let t = &r["throughput"];
    out.push_str(&format!(
        "throughput with {} concurrent callers: {:.0} calls/s",
        t["concurrency"],
        t["calls_per_sec"].as_f64().unwrap_or_default()
    ));
    let g = &r["search_grep_10k_files"];
    if !g.is_null() {
        out.push_str(&format!(
            "\nsearch.grep over 10,000 files: p50 {:.1} ms without the denied-path check, {:.1} ms with it ({:+.1}%)",
            g["without_check"]["p50_us"].as_f64().unwrap_or_default() / 1000.0,
            g["with_check"]["p50_us"].as_f64().unwrap_or_default() / 1000.0,
            g["overhead_pct"].as_f64().unwrap_or_default(),
        ));
    }
    for transport in ["stdio", "http"] {
        let m = &r["mcp"][transport];
        if !m.is_null() {
            out.push_str(&mcp(
                transport,
                m,
                &r["mcp"]["installed_plugins"],
                &r["runtime_alone"],
            ));
        }
    }
    out
}

/// One transport's figures, every round trip beside that transport's
/// `ping` (the floor a call cannot go below), and beside `ping` plus the
/// runtime alone (`alone`): how much of the ratio the runtime takes.
fn mcp(transport: &str, m: &Value, plugins: &Value, alone: &Value) -> String {
    let us = |v: &Value| v.as_f64().unwrap_or_default();
    let mut out = String::new();
    if !m["start_to_initialize_ms"].is_null() {
        out.push_str(&format!(
            "\nMCP over {transport}: initialize answered {:.1} ms after spawn (p90 {:.1}), first tools/call {:.2} ms (p90 {:.2}), over {} starts",
            us(&m["start_to_initialize_ms"]),
            us(&m["start_to_initialize_p90_ms"]),
            us(&m["first_call_ms"]),
            us(&m["first_call_p90_ms"]),
            m["starts"],
        ));
    }
    out.push_str(&format!(
        "\nMCP over {transport}: first tools/list {:.1} ms after start ({plugins} installed plugins, cached)",
        us(&m["start_to_first_tools_list_ms"]),
    ));
    let floor = us(&m["ping"]["p50_us"]);
    out.push_str(&format!(
        "\nMCP over {transport}, ping (the floor): p50 {floor:.1} us, p99 {:.1} us",
        us(&m["ping"]["p99_us"]),
    ));
    if !m["bare_rmcp_ping"].is_null() {
        let bare = us(&m["bare_rmcp_ping"]["p50_us"]);
        out.push_str(&format!(
            "\nMCP over {transport}, a bare rmcp server's ping: p50 {bare:.1} us, p99 {:.1} us (Warden's ping is {:.2}x)",
            us(&m["bare_rmcp_ping"]["p99_us"]),
            floor / bare.max(f64::MIN_POSITIVE),
        ));
    }
    if !m["console"].is_null() {
        let c = &m["console"];
        out.push_str(&format!(
            "\nconsole over {transport} (after this run's calls): approvals page p50 {:.2} ms, p99 {:.2} ms; audit page p50 {:.2} ms, p99 {:.2} ms",
            us(&c["approvals_page"]["p50_ms"]),
            us(&c["approvals_page"]["p99_ms"]),
            us(&c["audit_page"]["p50_ms"]),
            us(&c["audit_page"]["p99_ms"]),
        ));
    }
    for (label, what) in [
        ("fs_read_1b", "fs_read 1 B"),
        ("fs_read_4k", "fs_read 4 KiB"),
    ] {
        let p50 = us(&m[label]["p50_us"]);
        let with_alone = floor + us(&alone[label]["p50_us"]);
        out.push_str(&format!(
            "\nMCP over {transport}, tools/call {what}: p50 {p50:.1} us ({:.2}x ping), p99 {:.1} us; ping + the runtime alone: {with_alone:.1} us ({:.2}x ping)",
            p50 / floor.max(f64::MIN_POSITIVE),
            us(&m[label]["p99_us"]),
            with_alone / floor.max(f64::MIN_POSITIVE),
        ));
    }
    if !m["fs_read_1b_postgres"].is_null() {
        let pg = us(&m["fs_read_1b_postgres"]["p50_us"]);
        out.push_str(&format!(
            "\nMCP over {transport}, tools/call fs_read 1 B with the state in PostgreSQL: p50 {pg:.1} us ({:.2}x the SQLite host's), p99 {:.1} us",
            pg / us(&m["fs_read_1b"]["p50_us"]).max(f64::MIN_POSITIVE),
            us(&m["fs_read_1b_postgres"]["p99_us"]),
        ));
    }
    out.push_str(&format!(
        "\nMCP over {transport}, {} concurrent callers: {:.0} calls/s",
        m["throughput_4k"]["concurrency"],
        us(&m["throughput_4k"]["calls_per_s"]),
    ));
    out
}
