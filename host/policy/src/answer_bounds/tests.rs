use super::*;
use crate::{Mode, RuleSet};

const ENV: Env<'static> = Env {
    workspace: "/workspace",
    project: "/workspace",
    cwd: "/workspace",
    home: "/home/agent",
};

const WRITE: ToolFacts<'static> = ToolFacts {
    name: "fs_write",
    category: "file-system",
    action_type: "code:write",
    side_effect: true,
    isolation: crate::Isolation::Wasm,
    vcs: None,
};

const EXEC: ToolFacts<'static> = ToolFacts {
    name: "terminal_exec",
    category: "terminal",
    action_type: "test:run",
    side_effect: true,
    isolation: crate::Isolation::Wasm,
    vcs: None,
};

fn policy() -> AgentPolicy {
    AgentPolicy::rules_only("a", Mode::Default, RuleSet::default())
}

fn call<'a>(tool: ToolFacts<'a>, spec: &'a str) -> Call<'a> {
    Call {
        tool,
        specifier: Some(spec),
        resolved_path: None,
        remote_host: None,
        principal: None,
    }
}

/// The answer-bounds table: (tool, asked specifier, offered rule, accepted?).
#[test]
fn a_client_answer_adds_only_the_asked_call() {
    let cases: &[(ToolFacts<'static>, &str, &str, bool)] = &[
        // The prefilled exact rule, and equivalent spellings.
        (
            WRITE,
            "/workspace/a.txt",
            "fs_write(//workspace/a.txt)",
            true,
        ),
        (WRITE, "/workspace/a.txt", "fs_write(/a.txt)", true),
        (WRITE, "a.txt", "  fs_write(//workspace/a.txt) ", true),
        (EXEC, "npm test", "terminal_exec(npm test)", true),
        // A bare `*`, another tool, a tool glob, a bare tool.
        (WRITE, "/workspace/a.txt", "*", false),
        (
            WRITE,
            "/workspace/a.txt",
            "fs_delete(//workspace/a.txt)",
            false,
        ),
        (WRITE, "/workspace/a.txt", "fs_*", false),
        (WRITE, "/workspace/a.txt", "fs_*(//workspace/a.txt)", false),
        (WRITE, "/workspace/a.txt", "fs_write", false),
        (EXEC, "npm test", "terminal_exec", false),
        // Broader specifiers.
        (WRITE, "/workspace/a.txt", "fs_write(/**)", false),
        (
            WRITE,
            "/workspace/a.txt",
            "fs_write(//workspace/*.txt)",
            false,
        ),
        (
            WRITE,
            "/workspace/a.txt",
            "fs_write(//workspace/a.tx?)",
            false,
        ),
        (EXEC, "npm test", "terminal_exec(npm *)", false),
        (EXEC, "npm test", "terminal_exec(*)", false),
        // A rule that does not match the call at all.
        (
            WRITE,
            "/workspace/a.txt",
            "fs_write(//workspace/b.txt)",
            false,
        ),
        (EXEC, "npm test", "terminal_exec(rm -rf /)", false),
        // Not a rule.
        (WRITE, "/workspace/a.txt", "fs_write(", false),
    ];
    let p = policy();
    for (tool, spec, rule, ok) in cases {
        let c = call(*tool, spec);
        let refusal = p.client_rule_refusal(&c, &ENV, &exact(&c), rule);
        assert_eq!(
            refusal.is_none(),
            *ok,
            "{}({spec}) answered with `{rule}`: {refusal:?}",
            tool.name
        );
        if let Some(why) = refusal {
            assert!(why.contains(rule.trim()) || why.contains("rule"), "{why}");
        }
    }
}

#[test]
fn breakers_and_high_risk_actions_are_never_always_from_a_client() {
    let ask = Decision::ask(Layer::Mode, "side effect".to_owned());
    assert_eq!(never_always(&WRITE, &ask), None);
    let breaker = Decision::ask(Layer::CircuitBreaker, "rm -rf".to_owned());
    assert!(never_always(&EXEC, &breaker).is_some());
    for action in [
        "tool:create",
        "deploy:staging",
        "deploy:production",
        "org:promote",
    ] {
        let tool = ToolFacts {
            action_type: action,
            ..WRITE
        };
        assert!(never_always(&tool, &ask).is_some(), "{action}");
    }
    let secrets = ToolFacts {
        name: "vault_read_secret",
        ..WRITE
    };
    assert!(never_always(&secrets, &ask).is_some());
}

/// The rule an ask suggests for `c`, as `AgentPolicy::decide` makes it.
fn exact(c: &Call<'_>) -> String {
    let name = c.tool.normalized_name();
    let prepared = crate::specifier::Prepared::new(c, &ENV).unwrap();
    prepared
        .exact_rule(&name)
        .unwrap_or_else(|| prepared.display(&name))
}

/// Creating a tool is a circuit breaker: an autonomous agent with rules
/// that allow everything (and an allow rule naming the tool) is still
/// asked, and no rule naming the toolsmith's own proposal tool loads.
#[test]
fn tool_create_asks_in_every_mode_over_allow_all() {
    let create = ToolFacts {
        name: "make_tool",
        category: "code-execution",
        action_type: "tool:create",
        side_effect: true,
        isolation: crate::Isolation::Wasm,
        vcs: None,
    };
    let rules = RuleSet::parse(&["*".into(), "make_tool".into()], &[], &[]).unwrap();
    for mode in [Mode::Autonomous, Mode::AcceptEdits, Mode::Default] {
        let policy = AgentPolicy::rules_only("a", mode, rules.clone());
        let c = Call {
            tool: create,
            specifier: None,
            resolved_path: None,
            remote_host: None,
            principal: None,
        };
        let d = policy.decide(&c, &ENV);
        assert_eq!(d.decision, crate::Verdict::Ask, "{mode:?}: {d:?}");
        assert_eq!(d.layer, Layer::CircuitBreaker, "{mode:?}");
        assert!(never_always(&create, &d).is_some());
    }
    for rule in [
        "toolsmith_propose",
        "TOOLSMITH_PROPOSE",
        " toolsmith_propose(x)",
    ] {
        let err = RuleSet::parse(&[rule.into()], &[], &[]).unwrap_err();
        assert!(err.to_string().contains("tool:create"), "{rule}: {err}");
    }
    // Deny and ask rules for it load; only allowing it is refused.
    RuleSet::parse(
        &[],
        &["toolsmith_propose".into()],
        &["toolsmith_propose".into()],
    )
    .unwrap();
}
