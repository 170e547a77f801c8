//! The index may only skip rules that cannot match: for every call, every
//! rule that fires (deny, ask) or covers the call (allow) is a candidate.

use super::*;
use crate::facts::{Call, Env, ToolFacts};
use crate::rule::RuleSet;
use crate::specifier::Prepared;

const ENV: Env<'static> = Env {
    workspace: "/work/proj",
    project: "/work/proj",
    cwd: "/work/proj/src",
    home: "/home/agent",
};

const SHELL_RULES: &[&str] = &[
    "rm *",
    "rm -rf *",
    "rm -rf /",
    "/bin/rm *",
    "/usr/bin/rm -rf *",
    "git status",
    "git   status *",
    "npm run *",
    "npm run test:*",
    "*",
    "* -rf *",
    "r? *",
    "echo *",
    "cat",
    "cargo *",
    "'rm -rf' *",
    "\"\" rm *",
    "sudo *",
    "bash -c *",
    "x=1 *",
    "chmod -R *",
    "find . -delete",
    ":*",
    "",
];

const SHELL_CALLS: &[&str] = &[
    "ls && rm -rf /",
    "sudo timeout 5 rm -rf ~",
    "/bin/r? -rf /",
    "bash -c 'rm -rf /'",
    "find . -exec rm {} +",
    "'' rm -rf x",
    "> /dev/null",
    ">/dev/null; > /dev/null",
    "echo hi > /tmp/x",
    "cargo build --release && git status | cat",
    "\"rm\" -rf /",
    "r'm' -r -f /",
    "x=1 rm -rf /",
    "$(rm -rf /)",
    "npm run test",
    "npm run",
    "/usr/bin/rm -rf /",
    "git   status",
    "",
    " ",
    ";",
    "rm",
    "{rm,-rf,/}",
    "echo `rm -rf /`",
    "cat <<EOF\nrm -rf /\nEOF",
    "rm --recursive --force /",
    "chmod --recursive 777 /",
    "eval \"rm -rf /\"",
    "f() { f | f & }; f",
    "if true; then rm -rf /; fi",
];

const PATH_RULES: &[&str] = &[
    "/src/**",
    "src/**",
    "./lib.rs",
    "*.env",
    ".env",
    "//etc/**",
    "~/.ssh/**",
    "/",
    "//",
    "~",
    "../x/**",
    "/a/../b/**",
    "**/secret",
    "/**/x",
    "?rc/**",
    "secrets",
    "/src",
    "",
    "//work/proj/src/*.rs",
    "lib.rs",
];

const PATH_CALLS: &[&str] = &[
    "src/a.rs",
    "/etc/passwd",
    "../.env",
    "/work/proj/.env",
    "/home/agent/.ssh/id",
    "/",
    "/work/proj",
    "lib.rs",
    "/work/x/y",
    "/work/b/x",
    "deep/secret/key",
    "/work/proj/src/a.rs",
];

const PLAIN_RULES: &[&str] = &[
    "https://*",
    "https://api.example.com/*",
    "*",
    "https://api.example.com/v1/users",
    "h?tps://*",
    "https://api.example.com/v1/users/*",
    "",
    "a",
    "caf?",
    "café",
];

const PLAIN_CALLS: &[&str] = &[
    "https://api.example.com/v1/users",
    "https://api.example.com/v1/users/1",
    "",
    "a",
    "café",
    "https://api",
];

/// Every rule in three lists, on the exact tool `t`, on `*`, and unscoped.
fn rules(specs: &[&str]) -> RuleSet {
    let mut texts: Vec<String> = Vec::new();
    for s in specs {
        texts.push(format!("t({s})"));
        texts.push(format!("*({s})"));
    }
    texts.push("t".into());
    texts.push("u".into());
    RuleSet::parse(&texts, &texts, &texts).unwrap()
}

fn check(category: &str, rule_specs: &[&str], calls: &[&str]) {
    let set = rules(rule_specs);
    for spec in calls.iter().map(Some).chain([None]) {
        let call = Call {
            tool: ToolFacts {
                name: "t",
                category,
                action_type: "code:write",
                side_effect: true,
                isolation: crate::Isolation::Wasm,
                vcs: None,
            },
            specifier: spec.copied(),
            resolved_path: None,
            remote_host: None,
            principal: None,
        };
        let Ok(prepared) = Prepared::new(&call, &ENV) else {
            continue;
        };
        let deny = set.deny.candidates("t", &prepared.probe(true, &ENV));
        for rule in set.deny.for_tool("t") {
            if prepared.fires(rule, &ENV) {
                assert!(
                    deny.iter().any(|c| std::ptr::eq(c, rule)),
                    "{category}: `{}` fires on {spec:?} but is no candidate",
                    rule.text()
                );
            }
        }
        let allow = set.allow.candidates("t", &prepared.probe(false, &ENV));
        for rule in set.allow.for_tool("t") {
            let alone = RuleSet {
                allow: RuleSet::parse(&[rule.text().to_owned()], &[], &[])
                    .unwrap()
                    .allow,
                ..RuleSet::default()
            };
            if prepared.covered_by(&alone.allow, "t", &ENV).is_some() {
                assert!(
                    allow.iter().any(|c| std::ptr::eq(c, rule)),
                    "{category}: `{}` covers {spec:?} but is no candidate",
                    rule.text()
                );
            }
        }
        if let Prepared::Shell { line, .. } = &prepared {
            let all: Vec<&warden_shell::Pattern> =
                set.allow.for_tool("t").filter_map(Rule::shell).collect();
            let some: Vec<&warden_shell::Pattern> =
                allow.iter().filter_map(|r| r.shell()).collect();
            assert_eq!(
                warden_shell::allowed_by_patterns(&all, line),
                warden_shell::allowed_by_patterns(&some, line),
                "{spec:?}: the candidates cover the line part by part differently"
            );
        }
    }
}

#[test]
fn shell_candidates_include_every_match() {
    check("terminal", SHELL_RULES, SHELL_CALLS);
}

#[test]
fn path_candidates_include_every_match() {
    check("file-system", PATH_RULES, PATH_CALLS);
}

#[test]
fn plain_candidates_include_every_match() {
    check("web", PLAIN_RULES, PLAIN_CALLS);
}

#[test]
fn unrelated_rules_are_skipped() {
    let texts: Vec<String> = (0..100).map(|i| format!("t(tool{i} *)")).collect();
    let set = RuleSet::parse(&[], &[], &texts).unwrap();
    let line = warden_shell::CommandLine::parse("cargo build && git status");
    assert!(
        set.deny
            .candidates(
                "t",
                &Probe::ShellDeny {
                    line: &line,
                    keys: &OnceCell::new()
                }
            )
            .is_empty()
    );
    let line = warden_shell::CommandLine::parse("tool7 x");
    let keys = OnceCell::new();
    let found = set.deny.candidates(
        "t",
        &Probe::ShellDeny {
            line: &line,
            keys: &keys,
        },
    );
    assert_eq!(
        found.iter().map(|r| r.text()).collect::<Vec<_>>(),
        ["t(tool7 *)"]
    );
}
