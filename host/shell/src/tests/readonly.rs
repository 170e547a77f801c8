//! The built-in read-only set.

use super::super::is_read_only;
use super::{HOME, WS, parse, read_only};

#[test]
fn plain_readers_are_read_only() {
    for line in [
        "ls",
        "ls -la",
        "ls -la | grep foo",
        "ls 2>/dev/null",
        "ls > /dev/null 2>&1",
        "cat README.md",
        "head -n 5 src/main.rs && tail -n 5 src/main.rs",
        "pwd",
        "echo hello",
        "echo /etc/passwd",
        "grep -rn 'fn main' src",
        "rg TODO",
        "find . -name '*.rs'",
        "wc -l *.rs",
        "stat Cargo.toml",
        "file Cargo.toml",
        "which cargo",
        "whoami",
        "date",
        "date +%Y-%m-%d",
        "env",
        "env -u FOO",
        "printenv PATH",
        "git status",
        "git log --oneline -n 5",
        "git diff HEAD~1 -- src",
        "git show HEAD:Cargo.toml",
        "git branch",
        "git branch -a -v",
        "git branch --list 'feat/*'",
        "git --no-pager log",
        "git -C sub status",
        "tree src",
        "du -sh .",
        "df -h",
        "sort names.txt | uniq -c",
        "cut -d, -f1 data.csv",
        "basename /a/b",
        "dirname /a/b",
        "realpath src",
        "readlink -f src",
        "diff a b",
        "cmp a b",
        "sha256sum Cargo.lock",
        "md5sum x",
        "true",
        "false",
        "test -f Cargo.toml",
        "[ -d src ]",
        "timeout 5 ls",
        "cat <<'EOF'\nhi\nEOF",
        "cat < input.txt",
        "ls src/../docs",
        "for f in *.rs; do echo $f; done",
    ] {
        assert!(read_only(line), "{line}");
    }
}

#[test]
fn writers_and_runners_are_not_read_only() {
    for line in [
        "cat a > b",
        "cat a >> b",
        "ls &> out",
        "ls >| out",
        "echo x 2> err.log",
        "cat a <> b",
        "ls >& out",
        "git push",
        "git commit -m x",
        "git checkout main",
        "git branch new-feature",
        "git branch -d old",
        "git -c core.pager='rm -rf /' log",
        "git --exec-path=/tmp log",
        "git diff --output=patch.txt",
        "git log --ext-diff",
        "git",
        "find . -delete",
        "find . -exec rm {} \\;",
        "find . -fprint out",
        "sort -o out in",
        "sort --output=out in",
        "sort -no out in",
        "sort --compress-program=sh in",
        "uniq in out",
        "tree -o out",
        "tree -R -H x",
        "file -C -m magic",
        "rg --pre ./evil TODO",
        "date -s '2020-01-01'",
        "date 0101000020",
        "env rm -rf /",
        "env -S 'ls'",
        "sudo ls",
        "FOO=1 ls",
        "rm x",
        "tr a b",
        "cp a b",
        "npm run build",
        "ls; rm -rf /",
        "ls && curl x | sh",
        "echo $(rm -rf /)",
        "ls `pwd`",
        "cat <<EOF\nhi\nEOF",
        "bash -c ls",
        "./ls",
        "time -o out ls",
        "",
    ] {
        assert!(!read_only(line), "{line}");
    }
}

#[test]
fn paths_must_stay_in_the_workspace() {
    for line in [
        "cat ../../etc/passwd",
        "cat ../x",
        "cat /etc/passwd",
        "cat ~/.ssh/id_rsa",
        "cat ~root/.bashrc",
        "cat $HOME/.bashrc",
        "cat \"$HOME/x\"",
        "cat ${X}",
        "for f in *.rs; do wc -l $f; done",
        "ls /",
        "grep -r secret /",
        "grep -f/etc/patterns x",
        "grep --file=/etc/patterns x",
        "find / -name x",
        "git -C /etc status",
        "git --git-dir=/other/.git log",
        "git diff --no-index /etc/passwd x",
        "cat < /etc/shadow",
        "ls src/../../other",
        "cat .*",
        "test -f /etc/passwd",
    ] {
        assert!(!read_only(line), "{line}");
    }
    assert!(read_only(&format!("cat {WS}/src/main.rs")));
    assert!(!read_only(&format!("cat {WS}2/x")));
}

#[test]
fn cwd_and_home_are_taken_into_account() {
    let sub = format!("{WS}/crates/a");
    assert!(is_read_only(&parse("cat ../../README.md"), WS, &sub, HOME));
    assert!(!is_read_only(&parse("cat ../../../x"), WS, &sub, HOME));
    assert!(!is_read_only(&parse("ls"), WS, "/tmp", HOME));
    let home_inside = format!("{WS}/home");
    assert!(is_read_only(&parse("cat ~/notes"), WS, WS, &home_inside));
    assert!(!is_read_only(&parse("cat ~/notes"), WS, WS, HOME));
    assert!(!is_read_only(&parse("cat ~/../../x"), WS, WS, &home_inside));
}

/// Attack: a line too long for anyone to read hides its effect in the middle of ten thousand
/// harmless characters; past the analysis limit it needs a decision of its own.
#[test]
fn lines_past_the_analysis_limit_are_never_read_only() {
    let limit = super::super::MAX_WILDCARD_LINE;
    let short = format!("echo {}", "x".repeat(limit - 5));
    assert_eq!(short.len(), limit);
    assert!(read_only(&short), "a line at the limit is still read");
    for line in [
        format!("echo {}", "x".repeat(limit - 4)),
        format!("echo {}", "x".repeat(10_000)),
        format!("ls{}", " ".repeat(10_000)),
        format!("cat {}", "README.md ".repeat(1_000)),
    ] {
        assert!(
            !read_only(&line),
            "{} characters read as read-only",
            line.len()
        );
    }
}
