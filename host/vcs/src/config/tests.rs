//! The config check from the attacker's side: real files in a temp
//! workspace, each dangerous key refused by name, each smuggling trick
//! refused, a freshly cloned repository's config accepted.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::{ConfigCheck, ConfigViolation, check_repo_config};

/// What `git clone` (2.39) writes.
const CLONED: &str = "[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
[remote \"origin\"]
\turl = https://github.com/owner/repo.git
\tfetch = +refs/heads/*:refs/remotes/origin/*
[branch \"main\"]
\tremote = origin
\tmerge = refs/heads/main
";

/// A workspace with `repo/.git/config` holding `config`.
fn workspace(config: &[u8]) -> (TempDir, PathBuf) {
    let ws = TempDir::new().unwrap();
    let git = ws.path().join("repo/.git");
    fs::create_dir_all(&git).unwrap();
    fs::write(git.join("config"), config).unwrap();
    (ws, git)
}

fn check(config: &[u8]) -> Result<(), ConfigViolation> {
    let (_ws, git) = workspace(config);
    check_repo_config(&git)
}

fn refused_key(config: &str) -> String {
    match check(config.as_bytes()) {
        Err(ConfigViolation::Key { key, file, .. }) => {
            assert!(file.ends_with("config"), "{file:?}");
            key
        }
        other => panic!("{config:?}: expected a key violation, got {other:?}"),
    }
}

#[test]
fn a_cloned_repository_is_accepted() {
    check(CLONED.as_bytes()).unwrap();
    let (ws, git) = workspace(CLONED.as_bytes());
    let repo = ConfigCheck::new(ws.path()).unwrap().check(&git).unwrap();
    let urls: Vec<_> = repo.values("remote", Some("origin"), "URL").collect();
    assert_eq!(urls, vec![Some("https://github.com/owner/repo.git")]);
}

#[test]
fn harmless_extras_are_accepted() {
    let config = "[core]\n\tignorecase = true\n\tprecomposeunicode = true\n\tsymlinks = false\n\tautocrlf = input\n\teol = lf\n\
                  [extensions]\n\tobjectformat = sha256\n\tworktreeConfig = true\n\
                  [user]\n\tname = Agent Smith\n\temail = agent@example.com\n\
                  [branch \"feat/x\"]\n\trebase = true\n[remote \"upstream\"]\n\tpushurl = git@github.com:o/r.git\n";
    check(config.as_bytes()).unwrap();
    // Legacy `[section.sub]` form, lower-cased by git.
    check(b"[Remote.Origin]\n\tURL = https://github.com/o/r.git\n").unwrap();
    // A missing config is nothing to refuse.
    let (_ws, git) = workspace(b"");
    fs::remove_file(git.join("config")).unwrap();
    check_repo_config(&git).unwrap();
}

#[test]
fn each_dangerous_key_is_refused_by_name() {
    let cases: &[(&str, &str)] = &[
        ("[core]\n\tfsmonitor = /tmp/x.sh", "core.fsmonitor"),
        ("[core]\n\thooksPath = /tmp/hooks", "core.hookspath"),
        ("[core]\n\tsshCommand = sh -c x", "core.sshcommand"),
        ("[core]\n\tgitProxy = /tmp/p", "core.gitproxy"),
        ("[core]\n\tpager = sh -c x", "core.pager"),
        ("[core]\n\teditor = sh -c x", "core.editor"),
        ("[core]\n\taskPass = /tmp/x", "core.askpass"),
        ("[core]\n\tworktree = /etc", "core.worktree"),
        (
            "[core]\n\talternateRefsCommand = x",
            "core.alternaterefscommand",
        ),
        ("[sequence]\n\teditor = x", "sequence.editor"),
        (
            "[url \"http://127.0.0.1:1/\"]\n\tinsteadOf = https://github.com/",
            "url.http://127.0.0.1:1/.insteadof",
        ),
        (
            "[url \"x\"]\n\tpushInsteadOf = https://github.com/",
            "url.x.pushinsteadof",
        ),
        ("[http]\n\tproxy = http://127.0.0.1:3128", "http.proxy"),
        ("[http]\n\tsslVerify = false", "http.sslverify"),
        ("[http]\n\tfollowRedirects = true", "http.followredirects"),
        (
            "[http \"https://github.com\"]\n\tproxy = http://p",
            "http.https://github.com.proxy",
        ),
        (
            "[remote \"origin\"]\n\tproxy = http://p",
            "remote.origin.proxy",
        ),
        (
            "[remote \"origin\"]\n\tuploadpack = /tmp/x",
            "remote.origin.uploadpack",
        ),
        (
            "[remote \"origin\"]\n\treceivepack = /tmp/x",
            "remote.origin.receivepack",
        ),
        ("[remote \"origin\"]\n\tvcs = ext", "remote.origin.vcs"),
        (
            "[remote \"origin\"]\n\tpromisor = true",
            "remote.origin.promisor",
        ),
        ("[filter \"lfs\"]\n\tsmudge = sh -c x", "filter.lfs.smudge"),
        ("[filter \"x\"]\n\tclean = x", "filter.x.clean"),
        ("[filter \"x\"]\n\tprocess = x", "filter.x.process"),
        ("[merge \"x\"]\n\tdriver = x", "merge.x.driver"),
        ("[diff]\n\texternal = /tmp/x", "diff.external"),
        ("[diff \"x\"]\n\ttextconv = x", "diff.x.textconv"),
        ("[diff \"x\"]\n\tcommand = x", "diff.x.command"),
        ("[include]\n\tpath = /tmp/evil", "include.path"),
        (
            "[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil",
            "includeif.gitdir:/.path",
        ),
        ("[credential]\n\thelper = !sh -c x", "credential.helper"),
        (
            "[credential \"https://x\"]\n\thelper = x",
            "credential.https://x.helper",
        ),
        ("[submodule]\n\trecurse = true", "submodule.recurse"),
        ("[submodule \"s\"]\n\turl = https://x/r", "submodule.s.url"),
        (
            "[uploadpack]\n\tpackObjectsHook = x",
            "uploadpack.packobjectshook",
        ),
        (
            "[extensions]\n\tpartialClone = origin",
            "extensions.partialclone",
        ),
        ("[gpg]\n\tprogram = /tmp/x", "gpg.program"),
        ("[commit]\n\tgpgSign = true", "commit.gpgsign"),
        ("[log]\n\tshowSignature = true", "log.showsignature"),
        ("[alias]\n\tst = !sh -c x", "alias.st"),
        ("[protocol]\n\tallow = always", "protocol.allow"),
        ("[protocol \"ext\"]\n\tallow = always", "protocol.ext.allow"),
        ("[safe]\n\tdirectory = *", "safe.directory"),
        ("[init]\n\ttemplateDir = /tmp/t", "init.templatedir"),
        (
            "[branch \"main\"]\n\tpushRemote = evil",
            "branch.main.pushremote",
        ),
        ("[user]\n\tsigningKey = x", "user.signingkey"),
    ];
    for (config, key) in cases {
        assert_eq!(refused_key(config), *key, "{config}");
    }
}

#[test]
fn the_violation_names_key_file_and_line() {
    let msg = check(b"[core]\n\tbare = false\n\tfsmonitor = x\n")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("`core.fsmonitor`"), "{msg}");
    assert!(msg.contains("config:3"), "{msg}");
}

#[test]
fn smuggling_attempts_are_refused() {
    let key_cases: &[(&str, &str)] = &[
        // A key on the header's line (git reads it).
        ("[core] fsmonitor = x", "core.fsmonitor"),
        ("[core]fsmonitor=x", "core.fsmonitor"),
        // Case games.
        ("[CORE]\n\tFSMonitor = x", "core.fsmonitor"),
        ("[Core]\n\tHooksPath = x", "core.hookspath"),
        // An empty or dotted subsection is not the section itself.
        ("[core \"\"]\n\tbare = false", "core..bare"),
        ("[core.]\n\tbare = false", "core..bare"),
        ("[core \"x\"]\n\tbare = false", "core.x.bare"),
        // Legacy subsection syntax.
        ("[remote.origin]\n\tproxy = http://p", "remote.origin.proxy"),
        // An escaped quote keeps the subsection open: git reads `a"b`.
        ("[remote \"a\\\"b\"]\n\turl = x", "remote.a\\\"b.url"),
        // A comment ends the value; the backslash inside it continues nothing.
        (
            "[core]\n\tbare = false ;\\\n\tfsmonitor = x",
            "core.fsmonitor",
        ),
        (
            "[core]\n\tbare = false #\\\n\tfsmonitor = x",
            "core.fsmonitor",
        ),
        // `#` inside quotes is text; the continuation ends with the quote.
        (
            "[core]\n\tbare = \"false # \\\n\"\n\tfsmonitor = x",
            "core.fsmonitor",
        ),
        // A lone CR is whitespace to git, not a line end for it.
        ("[core]\r\tfsmonitor = x", "core.fsmonitor"),
        (
            "[core]\r\n\tbare = false\r\n\tfsmonitor = x\r\n",
            "core.fsmonitor",
        ),
        // A bare key is boolean true.
        ("[core]\n\tfsmonitor", "core.fsmonitor"),
        ("[core]\n\tfsmonitor= x # comment", "core.fsmonitor"),
        // A byte-order mark before the first header.
        ("\u{feff}[core]\n\tfsmonitor = x", "core.fsmonitor"),
        // Section names may hold `-`.
        ("[include-if]\n\tpath = x", "include-if.path"),
    ];
    for (config, key) in key_cases {
        assert_eq!(refused_key(config), *key, "{config:?}");
    }
    // What git itself would not parse is refused outright.
    let syntax_cases: &[&[u8]] = &[
        b"[url.http://evil/]\n\tinsteadOf = https://good/",
        b"[core]\n\tbare = \"false\n\tfsmonitor = x\"",
        b"[remote \"x\n\"]\n\turl = y",
        b"[core]\n\tfs.monitor = x",
        b"[core]\n\tbare = false\0\n[core]\n\tfsmonitor = x",
        b"[core]\n\tbare = \\q",
        b"[core \"x\" ]\n\tbare = 1",
        b"[core\n\tfsmonitor = x",
        b"fsmonitor = x\n[core]",
        b"[]\n\tbare = 1",
        b"[core]\n\t0bare = 1",
        b"[core]\n\tbare = \"\xff\"",
    ];
    for config in syntax_cases {
        match check(config) {
            Err(ConfigViolation::Syntax { .. }) => {}
            other => panic!(
                "{:?}: expected a syntax refusal, got {other:?}",
                String::from_utf8_lossy(config)
            ),
        }
    }
}

#[test]
fn a_continued_value_is_a_value_not_a_key() {
    // git reads one `url` whose value runs on; no fsmonitor key exists, and
    // the odd URL is refused later by the URL vetting.
    let (ws, git) = workspace(b"[remote \"origin\"]\n\turl = https://a/r \\\n\tfsmonitor = x\n");
    let repo = ConfigCheck::new(ws.path()).unwrap().check(&git).unwrap();
    let urls: Vec<_> = repo.values("remote", Some("origin"), "url").collect();
    // git 2.39 folds the inner whitespace to spaces (git 2.45+ keeps it).
    assert_eq!(urls, vec![Some("https://a/r  fsmonitor = x")]);
    assert_eq!(repo.entries().len(), 1);
}

/// The smuggling and syntax cases, read by the real `git config --list`
/// when a git binary is on PATH: every file git refuses is refused here,
/// and every file git reads yields the same entry names here.
#[test]
fn the_parser_agrees_with_real_git() {
    // The image's git (2.39 at /usr/bin/git) and whatever `git` is on PATH.
    let gits: Vec<&str> = ["/usr/bin/git", "git"]
        .into_iter()
        .filter(|g| {
            std::process::Command::new(g)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if gits.is_empty() {
        eprintln!("no git binary: differential test skipped");
        return;
    }
    for git in gits {
        agrees_with(git);
    }
}

fn agrees_with(git_bin: &str) {
    let cases: &[&[u8]] = &[
        CLONED.as_bytes(),
        b"[core] fsmonitor = x",
        b"[CORE]\n\tFSMonitor = x\n[Remote.Origin]\n\turl = y",
        b"[core \"\"]\n\tbare = false\n[core.]\n\tbare = 1",
        b"[remote \"a\\\"b\"]\n\turl = x",
        b"[remote \"a\\zb\"]\n\turl = x",
        b"[core]\n\tbare = false ;\\\n\tfsmonitor = x",
        b"[core]\n\tbare = \"false # \\\n\"\n\tfsmonitor = x",
        b"[core]\r\tfsmonitor = x",
        b"[core]\r\n\tbare = false\r\n\tfsmonitor = x\r\n",
        b"[core]\n\tfsmonitor",
        b"\xef\xbb\xbf[core]\n\tfsmonitor = x",
        b"[remote \"origin\"]\n\turl = https://a/r \\\n\tfsmonitor = x\n",
        b"[a-b]\n\tc-d = 1\n[x \"y.z\"]\n\tk = v",
        b"[url.http://evil/]\n\tinsteadOf = https://good/",
        b"[core]\n\tbare = \"false\n\tfsmonitor = x\"",
        b"[remote \"x\n\"]\n\turl = y",
        b"[core]\n\tfs.monitor = x",
        b"[core]\n\tbare = \\q",
        b"[core \"x\" ]\n\tbare = 1",
        b"[core\n\tfsmonitor = x",
        b"fsmonitor = x\n[core]",
        b"[]\n\tbare = 1",
        b"[core]\n\t0bare = 1",
        b"[core]\n\tbare #c\n",
        b"[core]\x0b\tbare = 1",
        b"[core]\n\tbare = 1 \\\n",
    ];
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("config");
    for case in cases {
        fs::write(&file, case).unwrap();
        let git = std::process::Command::new(git_bin)
            .args(["config", "--file"])
            .arg(&file)
            .args(["--list", "-z"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        let ours = super::parse::parse(case);
        let shown = String::from_utf8_lossy(case);
        if !git.status.success() {
            assert!(
                ours.is_err(),
                "{git_bin} refuses {shown:?}, we read {ours:?}"
            );
            continue;
        }
        let git_names: Vec<String> = git
            .stdout
            .split(|b| *b == 0)
            .filter(|item| !item.is_empty())
            .map(|item| {
                let name = item.split(|b| *b == b'\n').next().unwrap();
                String::from_utf8(name.to_vec()).unwrap()
            })
            .collect();
        // Where we are stricter than git, on purpose.
        let stricter: &[&[u8]] = &[b"fsmonitor = x\n[core]"];
        let ours = match ours {
            Ok(ours) => ours,
            Err(_) if stricter.contains(case) => continue,
            Err(e) => panic!("{git_bin} reads {shown:?}, we refuse it: {e:?}"),
        };
        let our_names: Vec<String> = ours
            .iter()
            .map(|e| match &e.subsection {
                Some(sub) => format!("{}.{sub}.{}", e.section, e.key),
                None => format!("{}.{}", e.section, e.key),
            })
            .collect();
        assert_eq!(our_names, git_names, "{git_bin}: {shown:?}");
    }
}

#[test]
fn worktree_config_is_checked() {
    let (_ws, git) = workspace(
        b"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n",
    );
    fs::write(git.join("config.worktree"), "[core]\n\tfsmonitor = x\n").unwrap();
    match check_repo_config(&git) {
        Err(ConfigViolation::Key { key, file, .. }) => {
            assert_eq!(key, "core.fsmonitor");
            assert!(file.ends_with("config.worktree"), "{file:?}");
        }
        other => panic!("{other:?}"),
    }
    // Checked even with the extension off: git would ignore it today, but
    // turning the extension on must not be the way past the check.
    let (_ws, git) = workspace(CLONED.as_bytes());
    fs::write(git.join("config.worktree"), "[core]\n\thooksPath = /tmp\n").unwrap();
    assert!(matches!(
        check_repo_config(&git),
        Err(ConfigViolation::Key { .. })
    ));
}

/// A workspace whose `repo/.git` is a `gitdir:` file with `pointer`.
fn pointer_workspace(pointer: &str) -> (TempDir, PathBuf) {
    let ws = TempDir::new().unwrap();
    let repo = ws.path().join("repo");
    fs::create_dir_all(&repo).unwrap();
    fs::write(repo.join(".git"), pointer).unwrap();
    (ws, repo.join(".git"))
}

#[test]
fn a_gitdir_pointer_inside_the_workspace_is_followed() {
    let ws = TempDir::new().unwrap();
    let real = ws.path().join("store/repo.git");
    fs::create_dir_all(&real).unwrap();
    fs::write(real.join("config"), "[core]\n\tfsmonitor = x\n").unwrap();
    fs::create_dir_all(ws.path().join("repo")).unwrap();
    let dot_git = ws.path().join("repo/.git");
    fs::write(&dot_git, "gitdir: ../store/repo.git\n").unwrap();
    let check = ConfigCheck::new(ws.path()).unwrap();
    assert!(
        matches!(check.check(&dot_git), Err(ConfigViolation::Key { key, .. }) if key == "core.fsmonitor")
    );
    fs::write(real.join("config"), CLONED).unwrap();
    check.check(&dot_git).unwrap();
}

#[test]
fn a_gitdir_pointer_to_elsewhere_is_refused() {
    let elsewhere = TempDir::new().unwrap();
    fs::write(elsewhere.path().join("config"), CLONED).unwrap();
    let (_ws, dot_git) = pointer_workspace(&format!("gitdir: {}\n", elsewhere.path().display()));
    assert!(matches!(
        check_repo_config(&dot_git),
        Err(ConfigViolation::Outside { .. })
    ));
    let (_ws, dot_git) = pointer_workspace("gitdir: ../../\n");
    assert!(matches!(
        check_repo_config(&dot_git),
        Err(ConfigViolation::Outside { .. })
    ));
    let (_ws, dot_git) = pointer_workspace("gitdir:/etc\n");
    assert!(matches!(
        check_repo_config(&dot_git),
        Err(ConfigViolation::GitFile { .. })
    ));
    let (_ws, dot_git) = pointer_workspace("gitdir: \n");
    assert!(matches!(
        check_repo_config(&dot_git),
        Err(ConfigViolation::GitFile { .. })
    ));
}

#[test]
fn symlinks_out_of_the_workspace_are_refused() {
    let elsewhere = TempDir::new().unwrap();
    fs::write(elsewhere.path().join("config"), CLONED).unwrap();
    // `.git` itself a symlink to a directory outside.
    let ws = TempDir::new().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), ws.path().join(".git")).unwrap();
    assert!(matches!(
        ConfigCheck::new(ws.path())
            .unwrap()
            .check(&ws.path().join(".git")),
        Err(ConfigViolation::Outside { .. })
    ));
    // `.git/config` a symlink to a file outside.
    let (_ws, git) = workspace(b"");
    fs::remove_file(git.join("config")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("config"), git.join("config")).unwrap();
    assert!(matches!(
        check_repo_config(&git),
        Err(ConfigViolation::Outside { .. })
    ));
}

#[test]
fn a_commondir_outside_the_workspace_is_refused() {
    let elsewhere = TempDir::new().unwrap();
    fs::write(elsewhere.path().join("config"), CLONED).unwrap();
    let (_ws, git) = workspace(CLONED.as_bytes());
    fs::write(
        git.join("commondir"),
        format!("{}\n", elsewhere.path().display()),
    )
    .unwrap();
    assert!(matches!(
        check_repo_config(&git),
        Err(ConfigViolation::Outside { .. })
    ));
}

#[test]
fn a_linked_worktree_reads_the_common_config() {
    let ws = TempDir::new().unwrap();
    let main = ws.path().join("main/.git");
    let wt_git = main.join("worktrees/feature");
    fs::create_dir_all(&wt_git).unwrap();
    fs::write(
        main.join("config"),
        "[core]\n\tbare = false\n[diff]\n\texternal = x\n",
    )
    .unwrap();
    fs::write(wt_git.join("commondir"), "../..\n").unwrap();
    fs::create_dir_all(ws.path().join("feature")).unwrap();
    let dot_git = ws.path().join("feature/.git");
    fs::write(&dot_git, format!("gitdir: {}\n", wt_git.display())).unwrap();
    let check = ConfigCheck::new(ws.path()).unwrap();
    assert!(
        matches!(check.check(&dot_git), Err(ConfigViolation::Key { key, .. }) if key == "diff.external")
    );
    fs::write(main.join("config"), CLONED).unwrap();
    check.check(&dot_git).unwrap();
}

#[test]
fn a_fifo_or_huge_config_is_refused_without_hanging() {
    let (_ws, git) = workspace(b"");
    let config = git.join("config");
    fs::remove_file(&config).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &config,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    assert!(matches!(
        check_repo_config(&git),
        Err(ConfigViolation::NotARegularFile { .. })
    ));

    let mut big = CLONED.to_owned();
    while big.len() <= crate::config::MAX_CONFIG_BYTES {
        big.push_str("# padding padding padding padding padding padding padding\n");
    }
    assert!(matches!(
        check(big.as_bytes()),
        Err(ConfigViolation::TooLarge { .. })
    ));
}

#[test]
fn a_directory_in_place_of_config_is_refused() {
    let (_ws, git) = workspace(b"");
    fs::remove_file(git.join("config")).unwrap();
    fs::create_dir(git.join("config")).unwrap();
    let err = check_repo_config(&git).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigViolation::NotARegularFile { .. } | ConfigViolation::Io { .. }
        ),
        "{err:?}"
    );
}

#[allow(dead_code, reason = "kept for the paths the assertions print")]
fn show(p: &Path) -> String {
    p.display().to_string()
}
