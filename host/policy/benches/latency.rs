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

use std::hint::black_box;
use std::time::{Duration, Instant};

use warden_policy::{AgentPolicy, Call, Env, Mode, RuleSet, ToolFacts};

const ENV: Env<'static> = Env {
    workspace: "/work/proj",
    project: "/work/proj",
    cwd: "/work/proj",
    home: "/home/agent",
};

fn matching_allow() -> Vec<String> {
    vec![
        "terminal.exec(cargo *)".into(),
        "terminal.exec(git status)".into(),
        "fs.write(/src/**)".into(),
        "http.fetch(https://api.example.com/*)".into(),
    ]
}

fn three_lists(n: usize, spec: impl Fn(usize) -> String) -> AgentPolicy {
    let (mut allow, mut ask, mut deny) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        match i % 3 {
            0 => deny.push(spec(i)),
            1 => ask.push(spec(i)),
            _ => allow.push(spec(i)),
        }
    }
    allow.extend(matching_allow());
    let rules = RuleSet::parse(&allow, &ask, &deny).unwrap();
    AgentPolicy::rules_only("bench", Mode::Default, rules)
}

fn spread(n: usize) -> AgentPolicy {
    let deny: Vec<String> = (0..n)
        .map(|i| format!("tool{}.x(/generated{i}/**)", i % 100))
        .collect();
    let rules = RuleSet::parse(&matching_allow(), &[], &deny).unwrap();
    AgentPolicy::rules_only("bench", Mode::Default, rules)
}

fn call<'a>(name: &'a str, category: &'a str, spec: &'a str) -> Call<'a> {
    Call {
        tool: ToolFacts {
            name,
            category,
            action_type: "code:write",
            side_effect: true,
            isolated: true,
        },
        specifier: Some(spec),
        resolved_path: None,
    }
}

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
    let shell = call(
        "terminal.exec",
        "terminal",
        "cargo build --release && git status | cat",
    );
    let path = call("fs.write", "file-system", "src/deep/module/file.rs");
    let plain = call("http.fetch", "web", "https://api.example.com/v1/users");
    let spread = spread(n);
    let same_shell = three_lists(n, |i| format!("terminal.exec(tool{i} --flag{i} *)"));
    let same_path = three_lists(n, |i| format!("fs.write(/generated{i}/**)"));
    let same_plain = three_lists(n, |i| format!("http.fetch(https://host{i}.example/*)"));
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
