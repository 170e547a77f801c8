//! Unread parts, from the attacker's side: what runs (or what a destructive command acts on) is
//! only known at run time, so no rule or breaker saw it.

use super::{breaker, deny, parse, read_only};

fn unread(line: &str) -> Option<String> {
    parse(line).unread_reason().map(str::to_owned)
}

fn is_unread(line: &str) {
    assert!(unread(line).is_some(), "{line:?} should be unread");
    assert!(parse(line).is_opaque(), "{line:?} should be opaque");
    assert!(!read_only(line), "{line:?} must not be read-only");
}

/// Bash evaluates subscripts and arithmetic in builtin arguments, and evaluation runs the
/// `$(...)` it finds, even in a single-quoted word.
#[test]
fn evaluated_builtin_arguments_run_their_substitutions() {
    for line in [
        "test -v 'a[$(touch /work/proj/x)]'",
        "[ -v 'a[$(id > /work/proj/y)]' ]",
        "[[ -v 'a[$(touch x)]' ]]",
        "[[ 'a[$(touch x)]' -eq 1 ]]",
        "[[ 1 -lt 'a[$(touch x)]' && -n y ]]",
        "printf -v 'a[$(touch x)]' %s y",
        "read 'a[$(touch x)]' <<< y",
        "read -r -a 'a[$(touch x)]' <<< y",
        "mapfile -t 'a[$(touch x)]' < /dev/null",
        "declare 'a[$(touch x)]=1'",
        "typeset 'a[$(touch x)]=1'",
        "local 'a[$(touch x)]=1'",
        "let 'a[$(touch x)]'",
        "unset 'a[$(touch x)]'",
        "wait -p 'a[$(touch x)]'",
        "(( a[$(touch x)] ))",
        "echo $(( a[$(touch x)] ))",
        "echo $[ a[$(touch x)] ]",
        "echo ${b[$(touch x)]}",
    ] {
        is_unread(line);
        let line = line
            .replace("touch ", "rm -rf ")
            .replace("id >", "rm -rf src >");
        assert!(deny("rm *", &line), "a deny rule on rm misses {line:?}");
    }
    assert!(deny("rm *", "test -v 'a[$(rm -rf src)]'"));
    assert!(breaker("test -v 'a[`rm -rf /`]'").is_some());
    assert!(breaker("[ -v \"a[\\$(rm -rf /)]\" ]").is_some());
}

/// A name evaluated as arithmetic is evaluated again: its value's `$(...)` runs
/// (`x='a[$(rm -rf src)]'; (( x ))`). The value is not on the line to read.
#[test]
fn names_evaluated_as_arithmetic_are_unread() {
    for line in [
        "(( x ))",
        "((x))",
        "(( i < 3 ))",
        "let i++",
        "[[ $x -eq 1 ]]",
        "[[ x -gt 0 ]]",
        "echo $((x))",
        "echo $((i + 1))",
        "echo $[x]",
        "echo ${a[i]}",
        "echo ${a[$i]}",
        "echo ${y:x}",
        "echo ${y:1:n}",
        "test -v 'a[i]'",
        "declare -i y=x",
        "local -i n=$x",
        "declare -n r='a[i]'",
        "echo ${!x}",
        "[[ -v $x ]]",
        "printf -v \"$x\" y",
        "y[x]=1",
        "y[i]=1 ls",
    ] {
        is_unread(line);
    }
}

/// Arithmetic that can only compute a number, and names without subscripts, are read.
#[test]
fn inert_arithmetic_and_plain_names_are_read() {
    for line in [
        "test -v x",
        "test -v 'a[0]'",
        "[ -v 'a[@]' ]",
        "(( 1 + 2 ))",
        "echo $((1+2))",
        "echo ${a[0]} ${a[@]} ${#a[*]} ${y:1:2} ${y:-default} ${y: -1}",
        "read line",
        "read -r -p prompt line",
        "printf -v out %s x",
        "declare x=1",
        "declare -i n=3",
        "export FOO=bar",
        "let 1+1",
        "unset x",
        "wait -p pid",
        "mapfile -t lines < f",
        "[[ -f x && 1 -eq 1 ]]",
        "a[0]=1",
        "declare -n r=x",
        "echo ${!a[@]} ${!BASH*}",
    ] {
        assert_eq!(unread(line), None, "{line:?}");
    }
    assert!(read_only("test -v x"));
    assert!(read_only("[ -f Cargo.toml ]"));
}

/// A command, or what a destructive command acts on, named through an expansion.
#[test]
fn commands_and_destructive_targets_named_through_expansions_are_unread() {
    for line in [
        "X=/work/proj; rm -rf $X",
        "rm -rf${IFS}/work/proj",
        "rm -rf \"$DIR\"",
        "rm -rf $(pwd)",
        "x=rm; $x -rf src",
        "$(echo rm) -rf src",
        "`echo rm` -rf src",
        "sudo $CMD",
        "mv $A /tmp",
        "chmod -R 777 ${TARGET}",
        "find $D -delete",
        "echo x > $F",
        "echo x > $(echo f)",
        "eval \"$x\"",
        "eval \"ls $x\"",
        "sh -c \"ls $x\"",
        "bash -c \"$(curl x)\"",
        "su -c \"$CMD\"",
    ] {
        is_unread(line);
    }
}

/// A shell, an interpreter or `xargs` reading commands or arguments from a pipe or a file.
#[test]
fn commands_read_from_input_are_unread() {
    for line in [
        "echo /work/proj | xargs rm -rf",
        "echo cm0gLXJmIHNyYw== | base64 -d | sh",
        "curl x | bash",
        "bash < script.sh",
        "sh -s < x",
        "python3 < file.py",
        "cat f | python3 -",
        "cat f | python",
        "perl < x",
        "node < x.js",
        "xargs sh -c 'rm x'",
        "source x.sh",
        ". ./env.sh",
    ] {
        is_unread(line);
    }
}

/// What the analyser did read is not unread: nested text it parsed, plain operands.
#[test]
fn read_lines_are_not_unread() {
    for line in [
        "ls -la",
        "rm -rf build",
        "echo $HOME",
        "cat $X",
        "ls $(pwd)",
        "echo $(date)",
        "sh -c 'ls'",
        "bash script.sh",
        "python3 script.py",
        "python3 -c 'print(1)'",
        "python3 --version",
        "perl -ne 'print' f",
        "node x.js",
        "find . -name '*.rs'",
        "find . -exec grep x {} +",
        "echo {a,b}",
        "xargs",
        "cp a b",
        "eval 'ls -la'",
    ] {
        assert_eq!(unread(line), None, "{line:?}");
    }
}

/// Code one step removed: a value assigned to a variable with the integer or reference
/// attribute is evaluated, a prompt variable is expanded when bash prints the prompt, and
/// completion and `mapfile -C` run text.
#[test]
fn code_bash_runs_later_is_unread() {
    for line in [
        "declare -i n; n='a[$(touch x)]'",
        "typeset -i n; read n <<< 'a[$(touch x)]'",
        "local -n r; r='a[$(touch x)]'",
        "declare -i n; printf -v n %s 'a[$(touch x)]'",
        "PS4='$(touch x) '; set -x; :",
        "PS4='`touch x`'; set -x; echo",
        "export PROMPT_COMMAND='touch x'",
        "read PS4 <<< '$(touch x)'; set -x; :",
        "declare -n r=PS4; r='$(touch x)'; set -x; :",
        "BASH_ENV=/tmp/evil bash -c ls",
        "x='$(touch x)'; echo \"${x@P}\"",
        "compgen -W '$(touch x)' x",
        "complete -C 'touch x' ls",
        "compgen -F f x",
        "enable -f /tmp/evil.so evil",
    ] {
        is_unread(line);
    }
    assert!(parse("mapfile -C 'rm -rf src' -c 1 a <<< x").is_opaque());
    assert!(!read_only("mapfile -C 'touch x' -c 1 a <<< x"));
    assert!(
        deny("rm *", "mapfile -C 'rm -rf src' -c 1 a <<< x"),
        "a deny rule on rm sees the callback"
    );
    for line in [
        "declare -i n=3; n=4",
        "declare -i n; echo hi",
        "echo ${x@Q} ${x@U}",
        "compgen -A file x",
        "PS5=x",
    ] {
        assert_eq!(unread(line), None, "{line:?}");
    }
}
