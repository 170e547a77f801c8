use super::*;
use crate::{Mode, RuleSet, ToolFacts};

const ENV: Env<'static> = Env {
    workspace: "/workspace",
    project: "/workspace",
    cwd: "/workspace",
    home: "/home/agent",
};

fn tool(name: &'static str, category: &'static str, action: &'static str) -> ToolFacts<'static> {
    ToolFacts {
        name,
        category,
        action_type: action,
        side_effect: true,
        isolation: crate::Isolation::Wasm,
        vcs: None,
    }
}

fn call<'a>(facts: ToolFacts<'a>, spec: Option<&'a str>) -> Call<'a> {
    Call {
        tool: facts,
        specifier: spec,
        resolved_path: None,
        remote_host: None,
        principal: None,
    }
}

fn policy(deny: &[&str]) -> AgentPolicy {
    let deny: Vec<String> = deny.iter().map(|s| s.to_string()).collect();
    AgentPolicy::rules_only("a", Mode::Default, RuleSet::parse(&[], &[], &deny).unwrap())
}

fn grant(id: &str, capability: &str, from: u64, to: u64) -> CapabilityGrant {
    CapabilityGrant {
        id: id.into(),
        agent: "a".into(),
        session: None,
        capability: capability.parse().unwrap(),
        boundary: Boundary::default(),
        goal: "fix the build".into(),
        issuer: "operator".into(),
        valid_from_ms: from,
        valid_to_ms: to,
    }
}

const WRITE: ToolFacts<'static> = ToolFacts {
    name: "fs_write",
    category: "file-system",
    action_type: "code:write",
    side_effect: true,
    isolation: crate::Isolation::Wasm,
    vcs: None,
};

#[test]
fn a_grant_allows_only_inside_its_window() {
    let p = policy(&[]);
    let set = GrantSet::new([grant("g-1", "tool:fs_write", 100, 200)]);
    let c = call(WRITE, Some("/workspace/a.txt"));
    for (now, verdict) in [
        (99, Verdict::Ask),
        (100, Verdict::Allow),
        (199, Verdict::Allow),
        (200, Verdict::Ask),
    ] {
        let d = decide_with_grants(&p, &c, &ENV, || &set, "s", now);
        assert_eq!(d.decision, verdict, "at {now}: {d:?}");
        if verdict == Verdict::Allow {
            assert_eq!((d.layer, d.grant.as_deref()), (Layer::Grant, Some("g-1")));
            assert!(d.reason.contains("fix the build"));
        } else {
            assert_eq!(d.grant, None);
            assert!(d.reason.contains("request_capability"), "{}", d.reason);
            assert!(d.reason.contains("tool:fs_write"), "{}", d.reason);
        }
    }
}

#[test]
fn a_revoked_grant_is_gone_once_the_set_is_rebuilt() {
    let p = policy(&[]);
    let c = call(WRITE, Some("/workspace/a.txt"));
    let all = vec![grant("g-1", "tool:fs_write", 0, 1000)];
    assert_eq!(
        decide_with_grants(&p, &c, &ENV, || Box::new(GrantSet::new(all)), "s", 5).decision,
        Verdict::Allow
    );
    let after_revoke: Vec<CapabilityGrant> = Vec::new();
    assert_eq!(
        decide_with_grants(
            &p,
            &c,
            &ENV,
            || Box::new(GrantSet::new(after_revoke)),
            "s",
            5
        )
        .decision,
        Verdict::Ask
    );
}

#[test]
fn category_action_and_glob_grants_cover_their_tools_only() {
    let p = policy(&[]);
    let c = call(WRITE, Some("/workspace/a.txt"));
    let other = call(
        tool("net_fetch", "web", "external_data:request"),
        Some("https://x.io/"),
    );
    for cap in [
        "category:file-system",
        "action:code:write",
        "action:code:*",
        "tool:fs_*",
    ] {
        let set = GrantSet::new([grant("g", cap, 0, 10)]);
        assert_eq!(
            decide_with_grants(&p, &c, &ENV, || &set, "s", 1).decision,
            Verdict::Allow,
            "{cap}"
        );
        assert_eq!(
            decide_with_grants(&p, &other, &ENV, || &set, "s", 1).decision,
            Verdict::Ask,
            "{cap} must not cover net_fetch"
        );
    }
}

#[test]
fn a_symlink_inside_the_boundary_does_not_carry_a_grant_out() {
    // `src/link` is a symlink to `/workspace/secrets`: lexically inside the
    // boundary, resolved outside it.
    let p = policy(&[]);
    let mut g = grant("g-1", "tool:fs_write", 0, 10);
    g.boundary.paths = vec!["/workspace/src".into()];
    let set = GrantSet::new([g]);
    let mut through_link = call(WRITE, Some("src/link/key.txt"));
    through_link.resolved_path = Some("/workspace/secrets/key.txt");
    assert_eq!(
        decide_with_grants(&p, &through_link, &ENV, || &set, "s1", 1).decision,
        Verdict::Ask
    );
    let mut plain = call(WRITE, Some("src/lib.rs"));
    plain.resolved_path = Some("/workspace/src/lib.rs");
    assert_eq!(
        decide_with_grants(&p, &plain, &ENV, || &set, "s1", 1).decision,
        Verdict::Allow
    );
}

#[test]
fn session_and_boundaries_narrow_a_grant() {
    let p = policy(&[]);
    let mut g = grant("g-1", "tool:fs_write", 0, 10);
    g.session = Some("s1".into());
    g.boundary.paths = vec!["/workspace/src".into()];
    let set = GrantSet::new([g]);
    let inside = call(WRITE, Some("src/lib.rs"));
    let climbing = call(WRITE, Some("src/../secrets.txt"));
    let sibling = call(WRITE, Some("/workspace/srcs/x"));
    assert_eq!(
        decide_with_grants(&p, &inside, &ENV, || &set, "s1", 1).decision,
        Verdict::Allow
    );
    assert_eq!(
        decide_with_grants(&p, &inside, &ENV, || &set, "s2", 1).decision,
        Verdict::Ask
    );
    assert_eq!(
        decide_with_grants(&p, &climbing, &ENV, || &set, "s1", 1).decision,
        Verdict::Ask
    );
    assert_eq!(
        decide_with_grants(&p, &sibling, &ENV, || &set, "s1", 1).decision,
        Verdict::Ask
    );

    let mut net = grant("g-2", "category:web", 0, 10);
    net.boundary.hosts = vec!["*.example.com".into()];
    let set = GrantSet::new([net]);
    let fetch = |url| call(tool("net_fetch", "web", "external_data:request"), Some(url));
    assert_eq!(
        decide_with_grants(
            &p,
            &fetch("https://api.example.com/x"),
            &ENV,
            || &set,
            "s",
            1
        )
        .decision,
        Verdict::Allow
    );
    assert_eq!(
        decide_with_grants(
            &p,
            &fetch("https://example.com.evil.io/"),
            &ENV,
            || &set,
            "s",
            1
        )
        .decision,
        Verdict::Ask
    );
}

#[test]
fn deny_rules_and_circuit_breakers_stand_over_grants() {
    let p = policy(&["fs_write(//workspace/secrets/**)"]);
    let set = GrantSet::new([
        grant("g-1", "tool:fs_write", 0, 10),
        grant("g-2", "category:terminal", 0, 10),
    ]);
    let denied = decide_with_grants(
        &p,
        &call(WRITE, Some("/workspace/secrets/k")),
        &ENV,
        || &set,
        "s",
        1,
    );
    assert_eq!(
        (denied.decision, denied.layer),
        (Verdict::Deny, Layer::Rule)
    );
    let shell = tool("sh_run", "terminal", "terminal:run");
    let breaker = decide_with_grants(&p, &call(shell, Some("rm -rf /")), &ENV, || &set, "s", 1);
    assert_eq!(breaker.layer, Layer::CircuitBreaker, "{breaker:?}");
    assert_eq!(breaker.decision, Verdict::Ask);
}

#[test]
fn capabilities_parse_strictly() {
    assert_eq!(
        "tool:FS.Write".parse::<Capability>().unwrap(),
        Capability::Tool("fs_write".into())
    );
    assert!("action:code".parse::<Capability>().is_err());
    assert!("fs_write".parse::<Capability>().is_err());
    assert!("tool:".parse::<Capability>().is_err());
    assert_eq!(
        Capability::Category("git".into()).to_string(),
        "category:git"
    );
}

#[test]
fn a_grant_never_outranks_the_denied_list() {
    let mut config = crate::config::PolicyConfig::default();
    let agent: crate::config::AgentConfig = serde_json::from_value(serde_json::json!({
        "level": "standard",
        "denied": ["fs_delete", "net_*"],
    }))
    .unwrap();
    config.agents.insert("a".into(), agent);
    let policy =
        crate::Policy::from_config(&config, &["code:delete", "external_data:request"]).unwrap();
    let p = policy.agent("a").unwrap();
    let set = GrantSet::new([
        grant("g-1", "tool:fs_delete", 0, 10),
        grant("g-2", "category:file-system", 0, 10),
        grant("g-3", "tool:net_fetch", 0, 10),
    ]);
    let delete = tool("fs_delete", "file-system", "code:delete");
    let d = decide_with_grants(
        p,
        &call(delete, Some("/workspace/a")),
        &ENV,
        || &set,
        "s",
        1,
    );
    assert_eq!(
        (d.decision, d.layer),
        (Verdict::Deny, Layer::Category),
        "{d:?}"
    );
    assert_eq!(d.grant, None);
    assert!(d.reason.contains("denied list"), "{}", d.reason);
    let fetch = tool("net_fetch", "web", "external_data:request");
    let d = decide_with_grants(p, &call(fetch, Some("https://x.io")), &ENV, || &set, "s", 1);
    assert_eq!(
        (d.decision, d.layer),
        (Verdict::Deny, Layer::Category),
        "{d:?}"
    );
}

/// A branch boundary reads the branch a git specifier names (`origin:main`
/// pushes `main`; `create:feat/x` makes `feat/x`): a push to `main` under
/// a `feat/*` grant is not covered, a push to `feat/x` is.
#[test]
fn a_branch_boundary_covers_the_named_branch_only() {
    let p = policy(&[]);
    let mut g = grant("g-1", "tool:git_push", 0, 10);
    g.boundary.branches = vec!["feat/*".into()];
    let set = GrantSet::new([g]);
    let mut push = tool("git_push", "version-control", "vcs:push");
    push.vcs = Some(crate::VcsOp::Push);
    let decide = |spec| decide_with_grants(&p, &call(push, Some(spec)), &ENV, || &set, "s", 1);
    let d = decide("origin:feat/x");
    assert_eq!(
        (d.decision, d.grant.as_deref()),
        (Verdict::Allow, Some("g-1")),
        "{d:?}"
    );
    for outside in ["origin:main", "origin:feat", "feat/x:main"] {
        assert_eq!(decide(outside).decision, Verdict::Ask, "{outside}");
    }
    // A force push inside the boundary still asks: a circuit breaker.
    push.vcs = Some(crate::VcsOp::ForcePush);
    let d = decide_with_grants(
        &p,
        &call(push, Some("origin:feat/x")),
        &ENV,
        || &set,
        "s",
        1,
    );
    assert_eq!(d.decision, Verdict::Ask, "{d:?}");
}

#[test]
fn the_grants_are_read_only_when_the_rules_would_not_allow_the_call() {
    let allowing = AgentPolicy::rules_only("a", Mode::Autonomous, RuleSet::default());
    let c = call(WRITE, Some("/workspace/a.txt"));
    let reads = std::cell::Cell::new(0);
    let set = GrantSet::new([grant("g-1", "tool:fs_write", 0, 10)]);
    let read = || {
        reads.set(reads.get() + 1);
        &set
    };
    let allowed = decide_with_grants(&allowing, &c, &ENV, read, "s", 1);
    assert_eq!(
        (allowed.decision, allowed.layer),
        (Verdict::Allow, Layer::Mode)
    );
    assert_eq!(reads.get(), 0, "a call the rules allow read the grants");
    let granted = decide_with_grants(&policy(&[]), &c, &ENV, read, "s", 1);
    assert_eq!(
        (granted.decision, granted.layer),
        (Verdict::Allow, Layer::Grant)
    );
    assert_eq!(reads.get(), 1);
}
