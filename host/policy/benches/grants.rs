//! Decision latency with 10,000 active capability grants
//! (`decide_with_grants`): the policy asks (default mode, no rules), so
//! every decision consults the grants.
//!
//! - `spread`: 10,000 grants over 100 agents and 100 tools; the caller's
//!   one matching grant is found through the tool index;
//! - `same_tool_worst`: all 10,000 grants for the caller and the called
//!   tool, each bounded to another directory, only the last matching:
//!   every grant's boundary is checked;
//! - `none_covers`: 10,000 grants, none for the caller's tool: the
//!   refusal names the grant that would allow the call.
//!
//! cargo bench -p warden-policy --bench grants

#![allow(clippy::unwrap_used, reason = "benchmarks fail loudly")]

#[allow(dead_code, reason = "each benchmark uses part of it")]
mod common;

use common::{ENV, path_call};
use warden_policy::{
    AgentPolicy, Boundary, Capability, CapabilityGrant, GrantSet, Mode, RuleSet, Verdict,
    decide_with_grants,
};

const GRANTS: usize = 10_000;
const NOW: u64 = 1_000_000;

fn main() {
    divan::main();
}

fn policy() -> AgentPolicy {
    AgentPolicy::rules_only(
        "bench",
        Mode::Default,
        RuleSet::parse(&[], &[], &[]).unwrap(),
    )
}

fn grant(i: usize, agent: String, tool: String, paths: Vec<String>) -> CapabilityGrant {
    CapabilityGrant {
        id: format!("g-{i}"),
        agent,
        session: None,
        capability: Capability::Tool(tool),
        boundary: Boundary {
            paths,
            ..Boundary::default()
        },
        goal: "bench".into(),
        issuer: "operator".into(),
        valid_from_ms: 0,
        valid_to_ms: NOW * 2,
    }
}

fn spread() -> GrantSet {
    GrantSet::new((0..GRANTS).map(|i| {
        let agent = if i % 100 == 0 {
            "bench".into()
        } else {
            format!("agent{}", i % 100)
        };
        let tool = if i == 0 {
            "fs_write".into()
        } else {
            format!("tool{}.run", i / 100)
        };
        grant(i, agent, tool, Vec::new())
    }))
}

fn same_tool() -> GrantSet {
    GrantSet::new((0..GRANTS).map(|i| {
        let dir = if i == GRANTS - 1 {
            "/work/proj/src".to_owned()
        } else {
            format!("/work/proj/other{i}")
        };
        grant(i, "bench".into(), "fs_write".into(), vec![dir])
    }))
}

fn none_covers() -> GrantSet {
    GrantSet::new((0..GRANTS).map(|i| grant(i, "bench".into(), format!("tool{i}.run"), Vec::new())))
}

fn run(bencher: divan::Bencher, set: GrantSet, expect: Verdict) {
    let policy = policy();
    let call = path_call();
    assert_eq!(
        decide_with_grants(&policy, &call, &ENV, || &set, "s", NOW).decision,
        expect
    );
    bencher.bench_local(|| {
        decide_with_grants(
            divan::black_box(&policy),
            divan::black_box(&call),
            &ENV,
            || &set,
            "s",
            NOW,
        )
    });
}

#[divan::bench]
fn spread_10k(bencher: divan::Bencher) {
    run(bencher, spread(), Verdict::Allow);
}

#[divan::bench]
fn same_tool_worst_10k(bencher: divan::Bencher) {
    run(bencher, same_tool(), Verdict::Allow);
}

#[divan::bench]
fn none_covers_10k(bencher: divan::Bencher) {
    run(bencher, none_covers(), Verdict::Ask);
}
