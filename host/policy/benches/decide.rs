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

#[allow(dead_code, reason = "each benchmark uses part of it")]
mod common;

use common::{ENV, agent, matching_allow, path_call, plain_call, shell_call};
use warden_policy::{AgentPolicy, Call};

fn main() {
    divan::main();
}

const ARGS: [usize; 3] = [10, 100, 1000];

fn run(b: divan::Bencher<'_, '_>, p: &AgentPolicy, c: &Call<'_>) {
    b.bench(|| p.decide(divan::black_box(c), &ENV));
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
                0 => deny.push(format!("terminal_exec(tool{i} *)")),
                1 => ask.push(format!("fs_write(/generated{i}/**)")),
                _ => allow.push(format!("http_fetch(https://host{i}.example/*)")),
            }
        }
        allow.extend(matching_allow());
        agent(&allow, &ask, &deny)
    }

    #[divan::bench(args = ARGS)]
    fn shell(b: divan::Bencher, n: usize) {
        run(b, &policy(n), &shell_call());
    }

    #[divan::bench(args = ARGS)]
    fn path(b: divan::Bencher, n: usize) {
        run(b, &policy(n), &path_call());
    }

    #[divan::bench(args = ARGS)]
    fn plain(b: divan::Bencher, n: usize) {
        run(b, &policy(n), &plain_call());
    }
}

mod same_tool {
    use super::*;

    #[divan::bench(args = ARGS)]
    fn shell(b: divan::Bencher, n: usize) {
        run(b, &common::same_tool_shell(n), &shell_call());
    }

    #[divan::bench(args = ARGS)]
    fn path(b: divan::Bencher, n: usize) {
        run(b, &common::same_tool_path(n), &path_call());
    }

    #[divan::bench(args = ARGS)]
    fn plain(b: divan::Bencher, n: usize) {
        run(b, &common::same_tool_plain(n), &plain_call());
    }
}

mod spread {
    use super::*;

    #[divan::bench(args = ARGS)]
    fn shell(b: divan::Bencher, n: usize) {
        run(b, &common::spread(n), &shell_call());
    }

    #[divan::bench(args = ARGS)]
    fn path(b: divan::Bencher, n: usize) {
        run(b, &common::spread(n), &path_call());
    }

    #[divan::bench(args = ARGS)]
    fn plain(b: divan::Bencher, n: usize) {
        run(b, &common::spread(n), &plain_call());
    }
}
