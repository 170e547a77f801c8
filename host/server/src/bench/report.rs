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
        if m.is_null() {
            continue;
        }
        out.push_str(&format!(
            "\nMCP over {transport}: first tools/list {:.1} ms after start ({} installed plugins, cached)",
            m["start_to_first_tools_list_ms"]
                .as_f64()
                .unwrap_or_default(),
            r["mcp"]["installed_plugins"],
        ));
        for (label, what) in [
            ("fs_read_1b", "fs_read 1 B"),
            ("fs_read_4k", "fs_read 4 KiB"),
        ] {
            out.push_str(&format!(
                "\nMCP over {transport}, tools/call {what}: p50 {:.1} us, p99 {:.1} us",
                m[label]["p50_us"].as_f64().unwrap_or_default(),
                m[label]["p99_us"].as_f64().unwrap_or_default(),
            ));
        }
        out.push_str(&format!(
            "\nMCP over {transport}, {} concurrent callers: {:.0} calls/s",
            m["throughput_4k"]["concurrency"],
            m["throughput_4k"]["calls_per_s"]
                .as_f64()
                .unwrap_or_default(),
        ));
    }
    out
}
