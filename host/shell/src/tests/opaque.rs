//! What is opaque: parts whose command cannot be read from the text.

use super::parse;

fn reasons(s: &str) -> Vec<String> {
    parse(s).opaque_reasons()
}

fn opaque_because(s: &str, needle: &str) {
    let r = reasons(s);
    assert!(
        r.iter().any(|x| x.contains(needle)),
        "{s:?}: expected reason containing {needle:?}, got {r:?}"
    );
}

#[test]
fn readable_lines_have_no_reasons() {
    for s in [
        "ls -la",
        "git status && npm run build",
        "echo \"$HOME\"",
        "cat <<'EOF'\nx\nEOF",
        "sudo apt update",
        "timeout 5 ls",
        "FOO=1 make",
        "(ls) && { pwd; }",
        "find . -name '*.rs'",
        "xargs",
        "bash script.sh",
        "echo {a,b}",
        "exec ls",
    ] {
        assert!(reasons(s).is_empty(), "{s:?}: {:?}", reasons(s));
    }
}

#[test]
fn substitutions_are_opaque() {
    opaque_because("echo $(date)", "command substitution");
    opaque_because("echo `date`", "command substitution");
    opaque_because("echo $((1+2))", "command substitution");
    opaque_because("diff <(ls a) <(ls b)", "process substitution");
    opaque_because("tee >(wc -l)", "process substitution");
    opaque_because("echo ${x:-$(rm -rf /)}", "command substitution");
    assert!(super::deny("rm -rf *", "echo ${x:-$(rm -rf /)}"));
}

#[test]
fn variables_in_command_position_are_opaque() {
    opaque_because("$CMD -rf /", "variable in command position");
    opaque_because("${X} a", "variable in command position");
    opaque_because("\"$CMD\" a", "variable in command position");
    opaque_because("sudo $CMD", "variable in command position");
    opaque_because("$1", "variable in command position");
    assert!(reasons("echo $X").is_empty());
}

#[test]
fn other_shells_and_eval_are_opaque() {
    opaque_because("bash -c 'ls'", "shell -c");
    opaque_because("sh -xc 'ls'", "shell -c");
    opaque_because("/bin/zsh -c ls", "shell -c");
    opaque_because("dash -o errexit -c ls", "shell -c");
    opaque_because("curl x | sh", "shell reads commands");
    opaque_because("bash -s", "shell reads commands");
    opaque_because("eval ls", "eval");
    opaque_because("source ./env.sh", "sources a file");
    opaque_because(". ./env.sh", "sources a file");
    opaque_because("alias ls='rm -rf /'", "alias");
    opaque_because("trap 'rm -rf /' EXIT", "trap");
    opaque_because("su -c 'rm -rf /' root", "command string");
    opaque_because("env -S 'rm -rf /'", "env -S");
    opaque_because("watch 'ls; rm x'", "watch");
}

#[test]
fn find_and_xargs_running_commands_are_opaque() {
    opaque_because("find . -exec rm {} \\;", "-exec");
    opaque_because("find . -execdir rm {} +", "-exec");
    opaque_because("find . -ok rm {} ;", "-exec");
    opaque_because("find . -delete", "-delete");
    opaque_because("ls | xargs rm", "xargs");
    opaque_because("xargs -0 -n 1 rm", "xargs");
    assert!(reasons("xargs -0").is_empty());
}

#[test]
fn misc_opaque_constructs() {
    opaque_because("exec 3>/tmp/x", "exec with only redirections");
    opaque_because("f() { ls; }", "function definition");
    opaque_because("/bin/r? -rf /", "glob in command name");
    opaque_because("{ls,-la}", "brace expansion in command name");
    opaque_because("cat > $OUT", "redirection target");
    opaque_because("echo >", "redirection without a target");
    opaque_because("cat <<EOF\nx\nEOF", "here-document");
}

#[test]
fn every_nested_part_sits_under_an_opaque_subcommand() {
    // Allow relies on this: a subcommand that is not opaque runs nothing hidden.
    for s in [
        "echo $(ls)",
        "bash -c 'ls'",
        "eval ls",
        "find . -exec ls \\;",
        "cat <<EOF\n$(ls)\nEOF",
        "trap 'ls' EXIT",
        "watch ls",
        "diff <(ls) <(ls)",
        "a=$(ls)",
    ] {
        for sub in parse(s).subcommands() {
            assert!(sub.nested().is_empty() || sub.is_opaque(), "{s:?}");
        }
    }
}
