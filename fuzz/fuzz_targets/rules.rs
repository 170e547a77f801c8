//! Any rule text and any call: parsing and deciding must return, never
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warden_policy::{AgentPolicy, Call, Env, Isolation, Mode, RuleSet, ToolFacts};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\u{1}');
    let rule = parts.next().unwrap_or_default().to_owned();
    let spec = parts.next().unwrap_or("x");
    let category = match data.first().copied().unwrap_or(0) % 3 {
        0 => "terminal",
        1 => "file-system",
        _ => "web",
    };
    let isolation = match data.get(1).copied().unwrap_or(0) % 3 {
        0 => Isolation::Host,
        1 => Isolation::Wasm,
        _ => Isolation::Container,
    };
    let Ok(rules) = RuleSet::parse(
        std::slice::from_ref(&rule),
        std::slice::from_ref(&rule),
        std::slice::from_ref(&rule),
    ) else {
        return;
    };
    let agent = AgentPolicy::rules_only("fuzz", Mode::Default, rules);
    let call = Call {
        tool: ToolFacts {
            name: "t_x",
            category,
            action_type: "code:write",
            side_effect: true,
            isolation,
            vcs: None,
        },
        specifier: Some(spec),
        resolved_path: parts.next(),
        remote_host: None,
        principal: None,
    };
    let env = Env {
        workspace: "/work",
        project: "/work",
        cwd: "/work",
        home: "/home/u",
    };
    let _ = agent.decide(&call, &env);
});
