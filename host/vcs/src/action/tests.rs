//! The operation -> action type, specifier and level table of spec 3.5.

use crate::{GitLevel, GitOp, Prompt, ResetMode, parse_git_url, vcs_action};

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn operations_map_to_action_types_and_specifiers() {
    let url = parse_git_url("git@github.com:owner/repo.git").unwrap();
    let cases: Vec<(GitOp, &str, &str)> = vec![
        (GitOp::Status { paths: vec![] }, "vcs:read", "."),
        (
            GitOp::Log {
                rev: None,
                max_count: 5,
                paths: vec![],
            },
            "vcs:read",
            "HEAD",
        ),
        (
            GitOp::Diff {
                from: Some(s("main")),
                to: Some(s("feat")),
                staged: false,
                paths: vec![],
            },
            "vcs:read",
            "main..feat",
        ),
        (GitOp::Show { rev: s("v1.0") }, "vcs:read", "v1.0"),
        (
            GitOp::Clone {
                dest: s("r"),
                depth: None,
            },
            "vcs:read",
            "github.com/owner/repo.git",
        ),
        (
            GitOp::Fetch {
                remote: s("origin"),
            },
            "vcs:read",
            "origin",
        ),
        (GitOp::BranchList, "vcs:branch", "list:*"),
        (
            GitOp::BranchCreate {
                name: s("feat/x"),
                start: None,
            },
            "vcs:branch",
            "create:feat/x",
        ),
        (
            GitOp::Switch {
                name: s("feat/x"),
                create: false,
            },
            "vcs:branch",
            "switch:feat/x",
        ),
        (
            GitOp::BranchDelete {
                name: s("feat/x"),
                force: false,
            },
            "vcs:branch",
            "delete:feat/x",
        ),
        (GitOp::Commit { message: s("m") }, "vcs:commit", "feat/x"),
        (
            GitOp::Restore {
                paths: vec![s("a")],
                staged: false,
                source: None,
            },
            "vcs:commit",
            "worktree:HEAD",
        ),
        (
            GitOp::Reset {
                mode: ResetMode::Hard,
                rev: s("HEAD~1"),
            },
            "vcs:commit",
            "hard:HEAD~1",
        ),
        (
            GitOp::Push {
                remote: s("origin"),
                branch: s("main"),
                force: false,
            },
            "vcs:push",
            "origin:main",
        ),
    ];
    for (op, action_type, specifier) in cases {
        let a = vcs_action(&op, Some(&url), Some("feat/x"));
        assert_eq!(
            (a.action_type, a.specifier.as_str()),
            (action_type, specifier),
            "{op:?}"
        );
        assert!(warden_api::BUILTIN_ACTION_TYPES.contains(&a.action_type));
        assert_eq!(a.network, op.is_network());
    }
}

#[test]
fn levels_permit_what_the_table_says() {
    use GitLevel::*;
    let s = |v: &str| v.to_owned();
    let table: Vec<(GitOp, [bool; 3])> = vec![
        (GitOp::Status { paths: vec![] }, [true, true, true]),
        (GitOp::Show { rev: s("HEAD") }, [true, true, true]),
        (
            GitOp::Clone {
                dest: s("r"),
                depth: None,
            },
            [false, true, true],
        ),
        (
            GitOp::Fetch {
                remote: s("origin"),
            },
            [false, true, true],
        ),
        (
            GitOp::BranchCreate {
                name: s("x"),
                start: None,
            },
            [true, true, true],
        ),
        (GitOp::Commit { message: s("m") }, [true, false, true]),
        (GitOp::Add { paths: vec![] }, [true, false, true]),
        (
            GitOp::Restore {
                paths: vec![s("a")],
                staged: true,
                source: None,
            },
            [false, false, true],
        ),
        (
            GitOp::Reset {
                mode: ResetMode::Soft,
                rev: s("HEAD"),
            },
            [false, false, true],
        ),
        (
            GitOp::Push {
                remote: s("origin"),
                branch: s("main"),
                force: false,
            },
            [false, false, true],
        ),
    ];
    for (op, [local, rab, full]) in table {
        let a = vcs_action(&op, None, None);
        assert_eq!(
            [
                a.permitted_at(LocalOnly),
                a.permitted_at(ReadAndBranch),
                a.permitted_at(Full)
            ],
            [local, rab, full],
            "{op:?}"
        );
    }
}

#[test]
fn prompts_follow_the_defaults() {
    let push = |force| GitOp::Push {
        remote: s("origin"),
        branch: s("main"),
        force,
    };
    assert_eq!(vcs_action(&push(false), None, None).prompt, Prompt::Always);
    let force = vcs_action(&push(true), None, None);
    assert_eq!(force.prompt, Prompt::CircuitBreaker);
    assert!(force.destructive);
    let delete = GitOp::BranchDelete {
        name: s("x"),
        force: false,
    };
    assert_eq!(vcs_action(&delete, None, None).prompt, Prompt::Always);
    let clone = GitOp::Clone {
        dest: s("r"),
        depth: None,
    };
    assert_eq!(
        vcs_action(&clone, None, None).prompt,
        Prompt::UnlessHostAllowlisted
    );
    assert_eq!(
        vcs_action(&GitOp::Commit { message: s("m") }, None, None).specifier,
        "HEAD"
    );
    assert_eq!(
        vcs_action(&GitOp::Status { paths: vec![] }, None, None).prompt,
        Prompt::Never
    );
}
