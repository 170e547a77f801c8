//! Command lines no wildcard allow rule may cover.
//!
//! Attack: widening an allow rule a person wrote for reading. `git *` was
//! meant for `git status`, not `git -c core.pager='sh -c …' log`;
//! `sed *` for printing, not `sed -i` or a script's `w`/`e` commands;
//! `echo *` for printing, not `echo x > .env`; `rg *` not `rg --pre
//! ./payload`; `find *` not `find . -delete`. And a glob can expand to an
//! option: with a file named `-delete` in the directory, `find *` is
//! `find -delete`. Such a line (or a very long one, which nobody reads)
//! is covered only by rules without wildcards; otherwise it needs its own
//! decision.

use super::lex::Word;
use super::paths::{Places, is_harmless_sink};
use super::wrappers::system_program;
use super::{CommandLine, SubCommand};
use crate::text_path::{expand_home, is_within, resolve};

/// Longer command lines are never covered by a wildcard allow rule.
pub const MAX_WILDCARD_LINE: usize = 4096;

/// Commands with options that write files or run programs.
pub(crate) const RISKY: &[&str] = &[
    "find", "sed", "rg", "sort", "tree", "git", "uniq", "file", "tee", "xargs", "awk", "perl",
];

/// Whether `line` (its text `text`) may be covered only by rules without
/// wildcards.
pub(crate) fn needs_own_decision(line: &CommandLine<'_>, text: &str, places: &Places<'_>) -> bool {
    text.len() > MAX_WILDCARD_LINE || any_sub(line, &mut |sub| risky(sub, places))
}

fn any_sub(line: &CommandLine<'_>, f: &mut impl FnMut(&SubCommand<'_>) -> bool) -> bool {
    line.subs
        .iter()
        .any(|sub| f(sub) || sub.nested.iter().any(|n| any_sub(n, f)))
}

fn risky(sub: &SubCommand<'_>, places: &Places<'_>) -> bool {
    // A write redirection is a write of its target: its own decision.
    if sub
        .redirects
        .iter()
        .any(|r| r.writes_file() && !is_harmless_sink(&r.target))
    {
        return true;
    }
    let Some(&start) = sub.allow_starts.last() else {
        return false;
    };
    let Some(cmd) = sub.words.get(start) else {
        return false;
    };
    let name = system_program(&cmd.text);
    if !RISKY.contains(&name) {
        return false;
    }
    let words = sub.words.get(start + 1..).unwrap_or(&[]);
    // An unquoted glob may expand to an option of a risky command.
    if words.iter().any(|w: &Word<'_>| w.glob) {
        return true;
    }
    let args: Vec<&str> = words.iter().map(|w| w.text.as_ref()).collect();
    dangerous(name, &args, places)
}

fn short_has(arg: &str, letter: char) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg.chars().skip(1).any(|c| c == letter)
}

fn long(arg: &str, name: &str) -> bool {
    arg == name || arg.starts_with(&format!("{name}="))
}

/// Options (and sed commands) that write or run.
fn dangerous(name: &str, args: &[&str], places: &Places<'_>) -> bool {
    match name {
        // Writes its operands; a rule naming `tee` still covers it only
        // without wildcards.
        "tee" | "xargs" | "awk" | "perl" => true,
        "find" => args.iter().any(|a| {
            a.starts_with("-exec")
                || a.starts_with("-ok")
                || a.starts_with("-fprint")
                || matches!(*a, "-delete" | "-fls")
        }),
        "sed" => args.iter().enumerate().any(|(i, a)| {
            short_has(a, 'i')
                || a.starts_with("--in-place")
                || (!a.starts_with('-') && sed_script_writes(a))
                || (matches!(*a, "-e" | "--expression")
                    && args.get(i + 1).is_some_and(|s| sed_script_writes(s)))
                || a.strip_prefix("--expression=")
                    .is_some_and(sed_script_writes)
        }),
        "rg" => args.iter().any(|a| a.starts_with("--pre")),
        "sort" => args.iter().any(|a| {
            (short_has(a, 'o') && !a.starts_with("--"))
                || long(a, "--output")
                || a.starts_with("--compress-program")
        }),
        "tree" => args.iter().any(|a| a.starts_with("-o") || *a == "-R"),
        "file" => args
            .iter()
            .any(|a| short_has(a, 'C') || long(a, "--compile")),
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() > 1,
        "git" => git_dangerous(args, places),
        _ => false,
    }
}

/// A sed script with a `w`/`W` (write a file) or `e` (run a command)
/// command, or an `s///` flag of either.
fn sed_script_writes(script: &str) -> bool {
    let b = script.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        if !matches!(c, b'w' | b'W' | b'e') {
            return false;
        }
        let before = i.checked_sub(1).and_then(|j| b.get(j)).copied();
        let after = b.get(i + 1).copied();
        let starts = before.is_none_or(|p| {
            matches!(p, b';' | b'}' | b'{' | b' ' | b'\n' | b'/' | b'$' | b'\t')
                || p.is_ascii_digit()
        });
        let ends = after.is_none_or(|n| matches!(n, b' ' | b';' | b'\n' | b'}' | b'\t'));
        starts && ends
    })
}

/// `git -c`, `--exec-path`, `--config-env`, or `-C`/`--git-dir`/`--work-tree`
/// outside the workspace.
fn git_dangerous(args: &[&str], places: &Places<'_>) -> bool {
    let outside = |dir: &str| {
        expand_home(dir, Some(&places.home))
            .is_none_or(|d| !is_within(&resolve(&places.cwd, &d, true), &places.ws))
    };
    args.iter().enumerate().any(|(i, a)| {
        *a == "-c"
            || a.starts_with("--exec-path")
            || a.starts_with("--config-env")
            || (matches!(*a, "-C" | "--git-dir" | "--work-tree")
                && args.get(i + 1).is_none_or(|d| outside(d)))
            || a.strip_prefix("--git-dir=").is_some_and(outside)
            || a.strip_prefix("--work-tree=").is_some_and(outside)
    })
}
