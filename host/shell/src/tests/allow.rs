//! Allow matching: every subcommand covered; only harmless wrappers stripped; opaque parts only
//! under exact patterns.

use super::allow;

const ALLOW: &[&str] = &[
    "ls *",
    "git status",
    "npm run *",
    "echo *",
    "cat *",
    "grep *",
];

#[test]
fn every_subcommand_must_be_covered() {
    assert!(allow(ALLOW, "ls -la && git status"));
    assert!(allow(ALLOW, "ls -la | grep foo"));
    assert!(allow(ALLOW, "npm run build; npm run test &"));
    assert!(!allow(ALLOW, "ls && rm -rf /"));
    assert!(!allow(ALLOW, "ls; curl x | sh"));
    assert!(!allow(ALLOW, "echo ok | sudo tee /etc/passwd"));
    assert!(!allow(ALLOW, "git status; git push"));
    assert!(!allow(ALLOW, "(ls) && { rm x; }"));
    assert!(!allow(ALLOW, ""));
    assert!(!allow(ALLOW, "# nothing"));
}

#[test]
fn harmless_wrappers_are_stripped() {
    assert!(allow(ALLOW, "timeout 5 ls"));
    assert!(allow(ALLOW, "timeout -s KILL 10s npm run build"));
    assert!(allow(ALLOW, "nice -n 10 ls"));
    assert!(allow(ALLOW, "nice ls"));
    assert!(allow(ALLOW, "nohup npm run dev &"));
    assert!(allow(ALLOW, "time ls"));
    assert!(allow(ALLOW, "time -p ls"));
    assert!(allow(ALLOW, "stdbuf -oL -e0 ls"));
    assert!(allow(ALLOW, "timeout 5 nice -n 5 nohup ls"));
    assert!(allow(ALLOW, "/usr/bin/timeout 5 /bin/ls"));
}

#[test]
fn powerful_wrappers_are_not_stripped() {
    for line in [
        "sudo ls",
        "doas ls",
        "env ls",
        "env FOO=1 ls",
        "FOO=1 ls",
        "PATH=/tmp/evil ls",
        "command ls",
        "exec ls",
        "xargs ls",
        "eval ls",
        "sh -c 'ls'",
        "bash -c ls",
        "timeout 5 sudo ls",
        "time -o out ls",
        "timeout abc ls",
        "nice --weird ls",
    ] {
        assert!(!allow(ALLOW, line), "{line}");
    }
    assert!(allow(&["sudo apt update"], "sudo apt update"));
    assert!(!allow(
        &["sudo apt update"],
        "sudo apt update && sudo rm -rf /"
    ));
}

#[test]
fn local_programs_are_not_system_programs() {
    assert!(!allow(ALLOW, "./ls"));
    assert!(!allow(ALLOW, "/tmp/x/ls"));
    assert!(!allow(ALLOW, "/usr/local/bin/ls"));
    assert!(allow(ALLOW, "/bin/ls -la"));
    assert!(allow(&["./build.sh *"], "./build.sh --fast"));
}

#[test]
fn opaque_subcommands_need_an_exact_pattern() {
    assert!(!allow(ALLOW, "echo $(rm -rf /)"));
    assert!(!allow(ALLOW, "echo `id`"));
    assert!(!allow(ALLOW, "ls $(pwd)"));
    assert!(!allow(ALLOW, "cat <<EOF\nhi\nEOF"));
    assert!(!allow(ALLOW, "echo 'unterminated"));
    assert!(!allow(ALLOW, "ls (x)"));
    assert!(!allow(&["*"], "bash -c 'rm -rf /'"));
    assert!(!allow(&["bash *"], "bash -c 'rm -rf /'"));
    assert!(allow(&["echo $(date)"], "echo $(date)"));
    assert!(allow(&["echo $(date)"], "echo \"$(date)\""));
    assert!(!allow(&["echo $(date)"], "echo $(date) x"));
    // One opaque subcommand does not hide the others.
    assert!(!allow(&["echo $(date)"], "echo $(date); rm -rf /"));
}

#[test]
fn readable_lines_with_expansions_in_arguments() {
    assert!(allow(ALLOW, "echo $HOME"));
    assert!(allow(ALLOW, "cat <<'EOF'\n$(rm -rf /)\nEOF"));
    assert!(allow(ALLOW, "for f in a b; do cat $f; done"));
    assert!(allow(ALLOW, "if ls x; then echo yes; fi"));
    assert!(allow(ALLOW, "ls 2>/dev/null"));
    assert!(allow(ALLOW, "{ ls; } 2>/dev/null"));
}

#[test]
fn nested_wrapped_destructive_commands_are_never_allowed() {
    for line in [
        "ls && sudo timeout 5 rm -rf /",
        "ls; (rm -rf /)",
        "ls | bash -c 'rm -rf /'",
        "ls $(rm -rf /)",
        "ls && eval 'rm -rf /'",
        "ls && {rm,-rf,/}",
        "ls && $'\\x72m' -rf /",
    ] {
        assert!(!allow(ALLOW, line), "{line}");
    }
}
