//! Decision latency with 10, 100 and 1,000 rules, for a path specifier, a
//! plain one, and a compound shell command (parsed per decision, as the
//! gate does).
//!
//! - `mixed`: the rules split over three tools (deny rules on the shell
//!   tool, ask rules on the file tool, allow rules on the web tool);
//! - `same_tool`: the worst case, every rule on the tool being called, in
//!   all three lists, none matching until the last allow rule;
//! - `spread`: the rules spread over 100 tools, as `warden bench` does.
//!
//! cargo bench -p warden-policy --bench decide

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

const ARGS: [usize; 3] = [10, 100, 1000];

/// The allow rules the calls below need, after every generated rule.
fn matching_allow() -> Vec<String> {
    vec![
        "terminal.exec(cargo *)".into(),
        "terminal.exec(git status)".into(),
        "fs.write(/src/**)".into(),
        "http.fetch(https://api.example.com/*)".into(),
    ]
}

fn agent(allow: &[String], ask: &[String], deny: &[String]) -> AgentPolicy {
    AgentPolicy::rules_only(
        "bench",
        Mode::Default,
        RuleSet::parse(allow, ask, deny).unwrap(),
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

fn shell_call() -> Call<'static> {
    call(
        "terminal.exec",
        "terminal",
        "code:write",
        "cargo build --release && git status | cat",
    )
}

fn path_call() -> Call<'static> {
    call(
        "fs.write",
        "file-system",
        "code:write",
        "src/deep/module/file.rs",
    )
}

fn plain_call() -> Call<'static> {
    call(
        "http.fetch",
        "web",
        "external_data:request",
        "https://api.example.com/v1/users",
    )
}

/// Deny, ask and allow rules in turn, each from `spec(i)`.
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
    agent(&allow, &ask, &deny)
}

mod mixed {
    use super::*;

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
        allow.extend(matching_allow());
        agent(&allow, &ask, &deny)
    }

    #[divan::bench(args = ARGS)]
    fn shell(b: divan::Bencher, n: usize) {
        let (p, c) = (policy(n), shell_call());
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }

    #[divan::bench(args = ARGS)]
    fn path(b: divan::Bencher, n: usize) {
        let (p, c) = (policy(n), path_call());
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }

    #[divan::bench(args = ARGS)]
    fn plain(b: divan::Bencher, n: usize) {
        let (p, c) = (policy(n), plain_call());
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }
}

mod same_tool {
    use super::*;

    #[divan::bench(args = ARGS)]
    fn shell(b: divan::Bencher, n: usize) {
        let p = three_lists(n, |i| format!("terminal.exec(tool{i} --flag{i} *)"));
        let c = shell_call();
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }

    #[divan::bench(args = ARGS)]
    fn path(b: divan::Bencher, n: usize) {
        let p = three_lists(n, |i| format!("fs.write(/generated{i}/**)"));
        let c = path_call();
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }

    #[divan::bench(args = ARGS)]
    fn plain(b: divan::Bencher, n: usize) {
        let p = three_lists(n, |i| format!("http.fetch(https://host{i}.example/*)"));
        let c = plain_call();
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }
}

mod spread {
    use super::*;

    /// `n` deny rules over 100 tools (a more typical policy, and what
    /// `warden bench` measures): the index leaves ~n/100 rules to look at.
    fn policy(n: usize) -> AgentPolicy {
        let deny: Vec<String> = (0..n)
            .map(|i| format!("tool{}.x(/generated{i}/**)", i % 100))
            .collect();
        agent(&matching_allow(), &[], &deny)
    }

    #[divan::bench(args = ARGS)]
    fn shell(b: divan::Bencher, n: usize) {
        let (p, c) = (policy(n), shell_call());
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }

    #[divan::bench(args = ARGS)]
    fn path(b: divan::Bencher, n: usize) {
        let (p, c) = (policy(n), path_call());
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }

    #[divan::bench(args = ARGS)]
    fn plain(b: divan::Bencher, n: usize) {
        let (p, c) = (policy(n), plain_call());
        b.bench(|| p.decide(divan::black_box(&c), &ENV));
    }
}
