//! Each local invocation run by the git 2.39 the image ships (skipped, with
//! a message, where `/usr/bin/git` is missing or another version): git must
//! accept every option we pass, and a repository whose hooks would write a
//! marker file must not get to write it. (The config check refuses such a
//! repository before any command; here the neutralisers are tested alone.)

use std::fs;
use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

use super::local_ops;
use crate::{GitOp, Invocation, Workspace, git_argv};

const GIT: &str = "/usr/bin/git";

fn git_2_39() -> bool {
    let version = Command::new(GIT).arg("--version").output();
    match version {
        Ok(out) if String::from_utf8_lossy(&out.stdout).starts_with("git version 2.39") => true,
        _ => {
            eprintln!("{GIT} is not git 2.39: real-git argv test skipped");
            false
        }
    }
}

fn run(inv: &Invocation) -> std::process::Output {
    Command::new(&inv.program)
        .args(&inv.args)
        .env_clear()
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap()
}

fn plain(repo: &Path, args: &[&str]) {
    let ok = Command::new(GIT)
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap()
        .success();
    assert!(ok, "setup: git {args:?}");
}

#[test]
fn git_accepts_every_local_invocation_and_runs_nothing_from_the_repository() {
    if !git_2_39() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let repo = dir.path().join("repo");
    fs::create_dir(&repo).unwrap();
    plain(&repo, &["init", "-q", "-b", "main"]);
    plain(&repo, &["config", "user.name", "T"]);
    plain(&repo, &["config", "user.email", "t@example.com"]);
    fs::write(repo.join("a.txt"), "one\n").unwrap();
    plain(&repo, &["add", "a.txt"]);
    plain(&repo, &["commit", "-q", "-m", "first"]);
    plain(
        &repo,
        &["remote", "add", "origin", "https://github.com/o/r.git"],
    );
    fs::write(repo.join("a.txt"), "two\n").unwrap();

    // Every way the repository could run a program, each writing a marker.
    let marker = dir.path().join("marker");
    let script = dir.path().join("evil.sh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\necho ran \"$0\" \"$@\" >> {}\ncat\n",
            marker.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let s = script.display().to_string();
    for (k, v) in [
        ("core.fsmonitor", s.as_str()),
        ("core.pager", s.as_str()),
        ("core.editor", s.as_str()),
        ("sequence.editor", s.as_str()),
        ("diff.external", s.as_str()),
        ("credential.helper", s.as_str()),
        ("core.askPass", s.as_str()),
    ] {
        plain(&repo, &["config", k, v]);
    }
    let hooks = repo.join(".git/hooks");
    for hook in [
        "pre-commit",
        "commit-msg",
        "post-commit",
        "post-checkout",
        "reference-transaction",
        "pre-auto-gc",
    ] {
        fs::copy(&script, hooks.join(hook)).unwrap();
    }

    let ws = Workspace::new(repo.to_str().unwrap())
        .unwrap()
        .with_identity("A", "a@example.com")
        .unwrap();
    let mut ops = local_ops();
    // Stage and commit before the branch operations need the commit.
    ops.insert(
        0,
        GitOp::Add {
            paths: vec!["a.txt".into()],
        },
    );
    ops.insert(
        1,
        GitOp::Commit {
            message: "--amend".into(),
        },
    );
    for (i, op) in ops.iter().enumerate() {
        if matches!(op, GitOp::Add { .. }) {
            fs::write(repo.join("a.txt"), format!("change {i}\n")).unwrap();
        }
        let out = run(&git_argv(op, None, &ws).unwrap());
        assert!(
            out.status.success(),
            "{op:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        !marker.exists(),
        "a repository program ran: {:?}",
        fs::read_to_string(&marker)
    );
    // The `--amend` message is a message, not an option.
    let log = run(&git_argv(
        &GitOp::Log {
            rev: None,
            max_count: 5,
            paths: vec![],
        },
        None,
        &ws,
    )
    .unwrap());
    assert!(String::from_utf8_lossy(&log.stdout).contains("\u{1f}--amend\u{1e}"));
}

/// A clone of `url`, its host pinned to 127.0.0.1, where nothing listens
/// on the port: git and ssh must accept every option, and the connection
/// must go to the pinned address (the name itself resolves nowhere).
fn clone_through_pin(url: &str) -> String {
    let dir = TempDir::new().unwrap();
    let policy = crate::GitNetPolicy::new()
        .allow_host("git.invalid")
        .unwrap();
    let url = crate::parse_git_url(url).unwrap();
    let v = crate::vet_answers(&url, &policy, &["127.0.0.1".parse().unwrap()]).unwrap();
    let ws = Workspace::new(dir.path().to_str().unwrap())
        .unwrap()
        .with_known_hosts(dir.path().join("known_hosts").to_str().unwrap())
        .unwrap();
    let op = GitOp::Clone {
        dest: "r".into(),
        depth: Some(1),
    };
    let out = run(&git_argv(&op, Some(&v), &ws).unwrap());
    assert!(!out.status.success());
    assert!(
        !dir.path().join("r").exists(),
        "a failed clone leaves nothing"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn https_clone_connects_only_to_the_pinned_address() {
    if !git_2_39() {
        return;
    }
    let err = clone_through_pin("https://git.invalid:1/o/r.git");
    assert!(
        err.contains("Failed to connect to git.invalid port 1"),
        "{err}"
    );
    assert!(!err.contains("Could not resolve host"), "{err}");
}

#[test]
fn ssh_clone_connects_only_to_the_pinned_address() {
    if !git_2_39() || !Path::new("/usr/bin/ssh").exists() {
        return;
    }
    let err = clone_through_pin("ssh://git@git.invalid:1/o/r.git");
    assert!(err.contains("connect to host 127.0.0.1 port 1"), "{err}");
    assert!(!err.contains("Bad configuration option"), "{err}");
    assert!(!err.contains("Could not resolve hostname"), "{err}");
}
