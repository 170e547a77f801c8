//! The policies and calls both benchmarks measure.

use warden_policy::{AgentPolicy, Call, Env, Mode, RuleSet, ToolFacts};

pub const ENV: Env<'static> = Env {
    workspace: "/work/proj",
    project: "/work/proj",
    cwd: "/work/proj",
    home: "/home/agent",
};

/// The allow rules the calls below need, after every generated rule.
pub fn matching_allow() -> Vec<String> {
    vec![
        "terminal_exec(cargo *)".into(),
        "terminal_exec(git status)".into(),
        "fs_write(/src/**)".into(),
        "http_fetch(https://api.example.com/*)".into(),
    ]
}

pub fn agent(allow: &[String], ask: &[String], deny: &[String]) -> AgentPolicy {
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
            isolation: warden_policy::Isolation::Wasm,
            vcs: None,
        },
        specifier: Some(spec),
        resolved_path: None,
        remote_host: None,
        principal: None,
    }
}

/// A compound command line, parsed per decision as the gate does.
pub fn shell_call() -> Call<'static> {
    call(
        "terminal_exec",
        "terminal",
        "code:write",
        "cargo build --release && git status | cat",
    )
}

pub fn path_call() -> Call<'static> {
    call(
        "fs_write",
        "file-system",
        "code:write",
        "src/deep/module/file.rs",
    )
}

pub fn plain_call() -> Call<'static> {
    call(
        "http_fetch",
        "web",
        "external_data:request",
        "https://api.example.com/v1/users",
    )
}

/// `n` rules on the tool being called, deny, ask and allow in turn, none
/// matching until the last allow rules: the worst case.
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

pub fn same_tool_shell(n: usize) -> AgentPolicy {
    three_lists(n, |i| format!("terminal_exec(tool{i} --flag{i} *)"))
}

pub fn same_tool_path(n: usize) -> AgentPolicy {
    three_lists(n, |i| format!("fs_write(/generated{i}/**)"))
}

pub fn same_tool_plain(n: usize) -> AgentPolicy {
    three_lists(n, |i| format!("http_fetch(https://host{i}.example/*)"))
}

/// `n` deny rules over 100 tools (a more typical policy, and what
/// `warden bench` measures): the index leaves ~n/100 rules to look at.
pub fn spread(n: usize) -> AgentPolicy {
    let deny: Vec<String> = (0..n)
        .map(|i| format!("tool{}.x(/generated{i}/**)", i % 100))
        .collect();
    agent(&matching_allow(), &[], &deny)
}
