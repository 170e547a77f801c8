//! Decision latency as p50/p99 (what the design's target is stated in),
//! with 1,000 rules, for the same cases as `decide`: rules spread over
//! 100 tools (as `warden bench`) and the same-tool worst case.
//!
//! cargo bench -p warden-policy --bench latency [-- FILTER [SAMPLES]]
//!
//! With a filter (`same_tool/shell`, ...) only matching cases run; with a
//! sample count too, that many decisions run (for callgrind).

#![allow(clippy::unwrap_used, reason = "benchmarks fail loudly")]
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

#[allow(dead_code, reason = "each benchmark uses part of it")]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{ENV, path_call, plain_call, shell_call};
use warden_policy::{AgentPolicy, Call};

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let filter = args.first().cloned().unwrap_or_default();
    let samples: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let n = 1000;
    let (shell, path, plain) = (shell_call(), path_call(), plain_call());
    let spread = common::spread(n);
    let same_shell = common::same_tool_shell(n);
    let same_path = common::same_tool_path(n);
    let same_plain = common::same_tool_plain(n);
    let cases: [(&str, &AgentPolicy, &Call<'_>); 6] = [
        ("spread/plain", &spread, &plain),
        ("spread/path", &spread, &path),
        ("spread/shell", &spread, &shell),
        ("same_tool/plain", &same_plain, &plain),
        ("same_tool/path", &same_path, &path),
        ("same_tool/shell", &same_shell, &shell),
    ];
    for (label, policy, call) in cases {
        if !label.contains(filter.as_str()) {
            continue;
        }
        // Warm up caches and branch predictors.
        for _ in 0..samples.min(1000) {
            black_box(policy.decide(black_box(call), &ENV));
        }
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples {
            let started = Instant::now();
            black_box(policy.decide(black_box(call), &ENV));
            times.push(started.elapsed());
        }
        times.sort_unstable();
        println!(
            "{label:<16} {n} rules: p50 {:>6.2} us  p99 {:>6.2} us",
            percentile(&times, 0.50),
            percentile(&times, 0.99)
        );
    }
}
