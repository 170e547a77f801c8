//! argv tests: the neutralisers and the clean environment on every
//! invocation, the pins, no user value readable as an option; and, where
//! git 2.39 is installed at `/usr/bin/git` (the git image's version), each
//! local invocation run for real on a repository whose config would run
//! a program, with the marker file never written.

use std::ffi::OsString;
use std::net::IpAddr;

use super::neutral::{BASE_ENV, NEUTRALISERS};
use crate::{
    ArgError, GitNetPolicy, GitOp, Invocation, ResetMode, Vetted, Workspace, git_argv,
    git_argv_attempt, parse_git_url, vet_answers,
};

fn ws() -> Workspace {
    Workspace::new("/workspace").unwrap()
}

fn vetted(url: &str, addrs: &[&str]) -> Vetted {
    let policy = GitNetPolicy::new().allow_host("git.internal").unwrap();
    let addrs: Vec<IpAddr> = addrs.iter().map(|a| a.parse().unwrap()).collect();
    vet_answers(&parse_git_url(url).unwrap(), &policy, &addrs).unwrap()
}

fn args(inv: &Invocation) -> Vec<String> {
    inv.args
        .iter()
        .map(|a| a.to_str().unwrap().to_owned())
        .collect()
}

fn env(inv: &Invocation, key: &str) -> String {
    inv.env_var(key).unwrap().to_str().unwrap().to_owned()
}

fn local_ops() -> Vec<GitOp> {
    let s = |v: &str| v.to_owned();
    vec![
        GitOp::Status { paths: vec![] },
        GitOp::Status {
            paths: vec![s("src")],
        },
        GitOp::Log {
            rev: None,
            max_count: 20,
            paths: vec![],
        },
        GitOp::Log {
            rev: Some(s("HEAD~1")),
            max_count: 1,
            paths: vec![s("a.txt")],
        },
        GitOp::Diff {
            from: None,
            to: None,
            staged: false,
            paths: vec![],
        },
        GitOp::Diff {
            from: Some(s("HEAD")),
            to: None,
            staged: true,
            paths: vec![s("a.txt")],
        },
        GitOp::Show { rev: s("HEAD") },
        GitOp::BranchList,
        GitOp::CurrentBranch,
        GitOp::BranchCreate {
            name: s("feat/x"),
            start: Some(s("HEAD")),
        },
        GitOp::Switch {
            name: s("feat/x"),
            create: false,
        },
        GitOp::Switch {
            name: s("feat/y"),
            create: true,
        },
        GitOp::Add { paths: vec![] },
        GitOp::Add {
            paths: vec![s("a.txt")],
        },
        GitOp::Commit {
            message: s("a message"),
        },
        GitOp::Restore {
            paths: vec![s("a.txt")],
            staged: true,
            source: None,
        },
        GitOp::Restore {
            paths: vec![s("a.txt")],
            staged: false,
            source: Some(s("HEAD")),
        },
        GitOp::Reset {
            mode: ResetMode::Mixed,
            rev: s("HEAD"),
        },
        GitOp::BranchDelete {
            name: s("feat/x"),
            force: true,
        },
        GitOp::GetUrl {
            remote: s("origin"),
        },
    ]
}

/// Index of the subcommand: the first argument after `-C <dir>`.
fn subcommand_at(a: &[String]) -> usize {
    a.iter().position(|x| x == "-C").unwrap() + 2
}

#[test]
fn every_invocation_carries_every_neutraliser_before_the_subcommand() {
    let net = [
        (
            GitOp::Clone {
                dest: "r".into(),
                depth: None,
            },
            vetted("https://github.com/o/r.git", &["140.82.121.4"]),
        ),
        (
            GitOp::Fetch {
                remote: "origin".into(),
            },
            vetted("git@github.com:o/r.git", &["140.82.121.4"]),
        ),
    ];
    let mut all: Vec<Invocation> = local_ops()
        .iter()
        .map(|op| git_argv(op, None, &ws()).unwrap())
        .collect();
    all.extend(
        net.iter()
            .map(|(op, v)| git_argv(op, Some(v), &ws()).unwrap()),
    );
    for inv in all {
        let a = args(&inv);
        let sub = subcommand_at(&a);
        for n in NEUTRALISERS {
            let at = a
                .iter()
                .position(|x| x == n)
                .unwrap_or_else(|| panic!("{n} missing in {a:?}"));
            assert_eq!(a[at - 1], "-c");
            assert!(at < sub, "{n} after the subcommand");
        }
        assert!(a.contains(&"safe.directory=/workspace".to_owned()));
        assert_eq!(a[..2], ["--no-pager", "--literal-pathspecs"]);
        assert_eq!(inv.program, "/usr/bin/git");
        // The complete environment: the fixed part, the ssh command, the
        // discovery ceiling; nothing else (no proxy, no GIT_DIR, no config).
        let keys: Vec<&str> = inv.env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        let mut want: Vec<&str> = BASE_ENV.iter().map(|(k, _)| *k).collect();
        want.extend(["GIT_SSH_COMMAND", "GIT_CEILING_DIRECTORIES"]);
        assert_eq!(keys, want);
        assert_eq!(env(&inv, "GIT_CONFIG_GLOBAL"), "/dev/null");
        assert_eq!(env(&inv, "GIT_CEILING_DIRECTORIES"), "/");
    }
}

#[test]
fn local_operations_have_no_ssh_and_no_pin() {
    for op in local_ops() {
        let inv = git_argv(&op, None, &ws()).unwrap();
        assert_eq!(env(&inv, "GIT_SSH_COMMAND"), "/bin/false");
        assert!(
            !args(&inv)
                .iter()
                .any(|a| a.starts_with("http.curloptResolve"))
        );
    }
}

#[test]
fn env_i_argv_starts_from_an_empty_environment() {
    let inv = git_argv(&GitOp::Status { paths: vec![] }, None, &ws()).unwrap();
    let argv = inv.env_i_argv();
    assert_eq!(
        argv[..2],
        [OsString::from("/usr/bin/env"), OsString::from("-i")]
    );
    assert!(argv.contains(&OsString::from("HOME=/nonexistent")));
    let git_at = argv.iter().position(|a| a == "/usr/bin/git").unwrap();
    assert!(
        argv[2..git_at]
            .iter()
            .all(|a| a.to_str().unwrap().contains('='))
    );
    assert_eq!(argv[git_at + 1..], inv.args[..]);
}

#[test]
fn https_pins_every_vetted_address_in_order_after_a_reset() {
    let v = vetted(
        "https://git.internal:8443/team/r.git",
        &["198.51.100.7", "127.0.0.1", "2001:db8::5"],
    );
    let inv = git_argv(
        &GitOp::Clone {
            dest: "r".into(),
            depth: Some(1),
        },
        Some(&v),
        &ws(),
    )
    .unwrap();
    let a = args(&inv);
    let reset = a.iter().position(|x| x == "http.curloptResolve=").unwrap();
    let pin = a
        .iter()
        .position(|x| {
            x == "http.curloptResolve=git.internal:8443:198.51.100.7,127.0.0.1,[2001:db8::5]"
        })
        .unwrap();
    assert!(
        reset < pin,
        "the reset must come first (a later empty value clears the pin)"
    );
    assert_eq!(
        a.iter()
            .filter(|x| x.starts_with("http.curloptResolve"))
            .count(),
        2
    );
    // The URL git is given is the vetted rendering, after `--`.
    let dash = a.iter().position(|x| x == "--").unwrap();
    assert_eq!(a[dash + 1..], ["https://git.internal:8443/team/r.git", "r"]);
    assert!(a.contains(&"--depth=1".to_owned()));
    assert!(a.contains(&"--no-recurse-submodules".to_owned()));
    assert_eq!(env(&inv, "GIT_SSH_COMMAND"), "/bin/false");
    assert!(!a.iter().any(|x| x.starts_with("protocol.http.allow")));
}

#[test]
fn an_ip_literal_host_needs_no_pin() {
    let v = vetted("https://8.8.8.8/r.git", &["8.8.8.8"]);
    let inv = git_argv(
        &GitOp::Fetch {
            remote: "origin".into(),
        },
        Some(&v),
        &ws(),
    )
    .unwrap();
    let pins: Vec<_> = args(&inv)
        .into_iter()
        .filter(|x| x.starts_with("http.curloptResolve"))
        .collect();
    assert_eq!(pins, ["http.curloptResolve="]);
}

#[test]
fn plain_http_is_allowed_through_git_only_when_vetted_so() {
    let policy = GitNetPolicy::new().allow_insecure_http(true);
    let url = crate::parse_git_url_with("http://example.com/r.git", &policy).unwrap();
    let v = vet_answers(&url, &policy, &["93.184.216.34".parse().unwrap()]).unwrap();
    let a = args(
        &git_argv(
            &GitOp::Fetch {
                remote: "origin".into(),
            },
            Some(&v),
            &ws(),
        )
        .unwrap(),
    );
    assert!(a.contains(&"protocol.http.allow=always".to_owned()));
}

#[test]
fn ssh_is_pinned_to_the_first_vetted_address_with_the_host_key_bound_to_the_name() {
    // Rebinding order: the resolver said 198.51.100.7 first, 127.0.0.1 second.
    let v = vetted(
        "ssh://git@git.internal:2222/team/r.git",
        &["198.51.100.7", "127.0.0.1"],
    );
    let ws = ws().with_known_hosts("/run/warden/known_hosts").unwrap();
    let push = GitOp::Push {
        remote: "origin".into(),
        branch: "feat/x".into(),
        force: false,
    };
    let inv = git_argv(&push, Some(&v), &ws).unwrap();
    let ssh = env(&inv, "GIT_SSH_COMMAND");
    for word in [
        "'/usr/bin/ssh' '-F' '/dev/null'",
        "'-o' 'HostName=198.51.100.7'",
        "'-o' 'HostKeyAlias=git.internal'",
        "'-o' 'BatchMode=yes'",
        "'-o' 'StrictHostKeyChecking=yes'",
        "'-o' 'UserKnownHostsFile=/run/warden/known_hosts'",
        "'-o' 'GlobalKnownHostsFile=/dev/null'",
        "'-o' 'ProxyCommand=none'",
        "'-o' 'PermitLocalCommand=no'",
        "'-o' 'ForwardAgent=no'",
    ] {
        assert!(ssh.contains(word), "{word} missing in {ssh}");
    }
    assert!(!ssh.contains("127.0.0.1"));
    assert_eq!(env(&inv, "GIT_SSH_VARIANT"), "ssh");
    let a = args(&inv);
    let dash = a.iter().position(|x| x == "--").unwrap();
    assert_eq!(
        a[dash + 1..],
        [
            "ssh://git@git.internal:2222/team/r.git",
            "refs/heads/feat/x:refs/heads/feat/x"
        ]
    );
    assert!(a.contains(&"--no-verify".to_owned()) && !a.contains(&"--force".to_owned()));
    // The retry uses the next address; there is none after the last.
    let second = git_argv_attempt(&push, Some(&v), &ws, 1).unwrap();
    assert!(env(&second, "GIT_SSH_COMMAND").contains("'HostName=127.0.0.1'"));
    assert!(git_argv_attempt(&push, Some(&v), &ws, 2).is_err());
}

#[test]
fn the_ssh_command_is_one_shell_word_per_argument() {
    let v = vetted("git@github.com:o/r.git", &["2606:50c0:8000::153"]);
    let inv = git_argv(
        &GitOp::Fetch {
            remote: "origin".into(),
        },
        Some(&v),
        &ws(),
    )
    .unwrap();
    let ssh = env(&inv, "GIT_SSH_COMMAND");
    // What `sh -c` would split it into: every word quoted, nothing else.
    let words: Vec<&str> = ssh.split(' ').collect();
    assert!(
        words
            .iter()
            .all(|w| w.len() >= 2 && w.starts_with('\'') && w.ends_with('\'')),
        "{ssh}"
    );
    assert!(ssh.contains("'HostName=2606:50c0:8000::153'"));
    assert_eq!(super::ssh::shell_join(&["it's".to_owned()]), r"'it'\''s'");
    // Paths that ssh would expand or split are refused outright.
    for bad in ["/a b", "/a%h", "~/kh", "relative", "/a/../b", "/a'b"] {
        assert!(ws().with_known_hosts(bad).is_err(), "{bad}");
    }
}

#[test]
fn network_operations_need_a_vetted_url_and_local_ones_refuse_it() {
    let fetch = GitOp::Fetch {
        remote: "origin".into(),
    };
    assert_eq!(
        git_argv(&fetch, None, &ws()),
        Err(ArgError::MissingVetted { op: "fetch" })
    );
    let v = vetted("https://github.com/o/r.git", &["140.82.121.4"]);
    let status = GitOp::Status { paths: vec![] };
    assert_eq!(
        git_argv(&status, Some(&v), &ws()),
        Err(ArgError::UnexpectedVetted { op: "status" })
    );
}

#[test]
fn no_user_value_becomes_an_option() {
    let s = |v: &str| v.to_owned();
    let refused = [
        GitOp::Show {
            rev: s("--output=/tmp/x"),
        },
        GitOp::Log {
            rev: Some(s("-p")),
            max_count: 1,
            paths: vec![],
        },
        GitOp::Diff {
            from: Some(s("--ext-diff")),
            to: None,
            staged: false,
            paths: vec![],
        },
        GitOp::BranchCreate {
            name: s("--force"),
            start: None,
        },
        GitOp::BranchCreate {
            name: s("ok"),
            start: Some(s("--orphan")),
        },
        GitOp::Switch {
            name: s("-D"),
            create: false,
        },
        GitOp::Switch {
            name: s("--detach"),
            create: true,
        },
        GitOp::BranchDelete {
            name: s("-r"),
            force: false,
        },
        GitOp::Reset {
            mode: ResetMode::Hard,
            rev: s("--recurse-submodules"),
        },
        GitOp::Restore {
            paths: vec![s("a")],
            staged: false,
            source: Some(s("-x")),
        },
        GitOp::GetUrl {
            remote: s("--upload-pack=touch /tmp/x"),
        },
        GitOp::Fetch {
            remote: s("-oProxyCommand=x"),
        },
        // Not options, but not refs either.
        GitOp::BranchCreate {
            name: s("a..b"),
            start: None,
        },
        GitOp::BranchCreate {
            name: s("x.lock"),
            start: None,
        },
        GitOp::BranchCreate {
            name: s("a b"),
            start: None,
        },
        GitOp::BranchCreate {
            name: s("@"),
            start: None,
        },
        GitOp::Status {
            paths: vec![s("../outside")],
        },
        GitOp::Status {
            paths: vec![s("/etc/passwd")],
        },
        GitOp::Add {
            paths: vec![s("a\nb")],
        },
        GitOp::Commit { message: s("  ") },
        GitOp::Commit { message: s("a\0b") },
        GitOp::Log {
            rev: None,
            max_count: 0,
            paths: vec![],
        },
    ];
    let v = vetted("https://github.com/o/r.git", &["140.82.121.4"]);
    for op in refused {
        let vet = op.is_network().then_some(&v);
        assert!(git_argv(&op, vet, &ws()).is_err(), "{op:?} was accepted");
    }
    let clone = GitOp::Clone {
        dest: s("--upload-pack=x"),
        depth: None,
    };
    assert!(matches!(
        git_argv(&clone, Some(&v), &ws()),
        Err(ArgError::LeadingDash { .. })
    ));

    // Accepted values that look like options stay where git cannot read
    // them as options: after `--`, or inside one `--opt=value` argument.
    let a = args(
        &git_argv(
            &GitOp::Add {
                paths: vec![s("--exec=x"), s("-f")],
            },
            None,
            &ws(),
        )
        .unwrap(),
    );
    let dash = a.iter().position(|x| x == "--").unwrap();
    assert_eq!(a[dash + 1..], ["--exec=x", "-f"]);
    let a = args(
        &git_argv(
            &GitOp::Commit {
                message: s("--amend"),
            },
            None,
            &ws(),
        )
        .unwrap(),
    );
    assert!(a.contains(&"--message=--amend".to_owned()) && !a.contains(&"--amend".to_owned()));
    // Revisions follow `--end-of-options`.
    let a = args(&git_argv(&GitOp::Show { rev: s("HEAD~1") }, None, &ws()).unwrap());
    let end = a.iter().position(|x| x == "--end-of-options").unwrap();
    assert_eq!(a[end + 1], "HEAD~1");
}

#[test]
fn the_identity_goes_into_the_environment() {
    let ws = ws()
        .with_identity("Agent Smith", "agent@example.com")
        .unwrap();
    let inv = git_argv(
        &GitOp::Commit {
            message: "m".into(),
        },
        None,
        &ws,
    )
    .unwrap();
    assert_eq!(env(&inv, "GIT_AUTHOR_NAME"), "Agent Smith");
    assert_eq!(env(&inv, "GIT_COMMITTER_EMAIL"), "agent@example.com");
    assert!(
        Workspace::new("/w")
            .unwrap()
            .with_identity("a\nb", "e")
            .is_err()
    );
    assert!(
        Workspace::new("/w")
            .unwrap()
            .with_identity("a", "<e>")
            .is_err()
    );
}

#[test]
fn force_push_says_so() {
    let v = vetted("https://github.com/o/r.git", &["140.82.121.4"]);
    let op = GitOp::Push {
        remote: "origin".into(),
        branch: "main".into(),
        force: true,
    };
    assert!(args(&git_argv(&op, Some(&v), &ws()).unwrap()).contains(&"--force".to_owned()));
}

mod real_git;
