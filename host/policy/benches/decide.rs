//! Decision latency with 10, 100 and 1,000 rules, for a path specifier, a
//! plain one, and a compound shell command (parsed per decision, as the
//! gate does).
//!
//! cargo bench -p warden-policy

#![allow(clippy::unwrap_used, reason = "benchmarks fail loudly")]

use warden_policy::{AgentPolicy, Call, Env, Mode, RuleSet, ToolFacts};

fn main() {
    divan::main();
}

const ENV: Env<'static> = Env {
    workspace: "/work/proj",
    project: "/work/proj",
    cwd: "/work/proj",
    home: "/home/agent",
};

/// `n` rules spread over deny, ask and allow, none matching the calls
/// below until the last allow rules, so every decision scans them all.
fn policy(n: usize) -> AgentPolicy {
    let mut allow = Vec::new();
    let mut ask = Vec::new();
    let mut deny = Vec::new();
    for i in 0..n {
        match i % 3 {
            0 => deny.push(format!("terminal.exec(tool{i} *)")),
            1 => ask.push(format!("fs.write(/generated{i}/**)")),
            _ => allow.push(format!("http.fetch(https://host{i}.example/*)")),
        }
    }
    allow.push("terminal.exec(cargo *)".into());
    allow.push("terminal.exec(git status)".into());
    allow.push("fs.write(/src/**)".into());
    allow.push("http.fetch(https://api.example.com/*)".into());
    AgentPolicy::rules_only(
        "bench",
        Mode::Default,
        RuleSet::parse(&allow, &ask, &deny).unwrap(),
    )
}

fn call<'a>(name: &'a str, category: &'a str, action: &'a str, spec: &'a str) -> Call<'a> {
    Call {
        tool: ToolFacts {
            name,
            category,
            action_type: action,
            side_effect: true,
            isolated: true,
        },
        specifier: Some(spec),
        resolved_path: None,
    }
}

#[divan::bench(args = [10, 100, 1000])]
fn shell_compound(b: divan::Bencher, n: usize) {
    let p = policy(n);
    let c = call(
        "terminal.exec",
        "terminal",
        "code:write",
        "cargo build --release && git status | cat",
    );
    b.bench(|| p.decide(divan::black_box(&c), &ENV));
}

#[divan::bench(args = [10, 100, 1000])]
fn path(b: divan::Bencher, n: usize) {
    let p = policy(n);
    let c = call(
        "fs.write",
        "file-system",
        "code:write",
        "src/deep/module/file.rs",
    );
    b.bench(|| p.decide(divan::black_box(&c), &ENV));
}

#[divan::bench(args = [10, 100, 1000])]
fn plain(b: divan::Bencher, n: usize) {
    let p = policy(n);
    let c = call(
        "http.fetch",
        "web",
        "external_data:request",
        "https://api.example.com/v1/users",
    );
    b.bench(|| p.decide(divan::black_box(&c), &ENV));
}

/// 1,000 rules spread over 100 tools (a more typical policy): the index
/// leaves ~10 rules to look at.
#[divan::bench(args = [10, 100, 1000])]
fn path_spread(b: divan::Bencher, n: usize) {
    let deny: Vec<String> = (0..n)
        .map(|i| format!("tool{}.write(/generated{i}/**)", i % 100))
        .collect();
    let allow = vec!["fs.write(/src/**)".to_owned()];
    let p = AgentPolicy::rules_only(
        "bench",
        Mode::Default,
        RuleSet::parse(&allow, &[], &deny).unwrap(),
    );
    let c = call(
        "fs.write",
        "file-system",
        "code:write",
        "src/deep/module/file.rs",
    );
    b.bench(|| p.decide(divan::black_box(&c), &ENV));
}
