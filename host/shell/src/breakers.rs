//! Circuit breakers: commands that always need a person, whatever mode or rule says otherwise.
//!
//! These are the few commands whose damage cannot be undone and that no agent task needs: a
//! recursive delete or permission change of `/`, a top-level directory, home or the workspace;
//! formatting or overwriting a disk; a fork bomb. They are looked for in every subcommand,
//! through every wrapper and inside `sh -c`, `eval` and `$(...)` text, in every flag spelling
//! (`-rf`, `-r -f`, `--recursive`, flags after operands). A directory change earlier on the line
//! (`cd / && rm -rf *`) is followed, and a variable that may be empty (`rm -rf "$X"/*`) is read
//! as empty.

use std::borrow::Cow;

use super::lex::Word;
use super::paths::{Places, dev_name, is_block_device, is_harmless_device};
use super::pattern::word_glob;
use super::wrappers::program_name;
use super::{CommandLine, SubCommand};
use crate::text_path::{expand_home, is_within, resolve};

/// Normalised workspace and home.
struct Ctx<'a> {
    ws: &'a str,
    home: &'a str,
}

/// See [`super::circuit_breaker`].
pub(crate) fn circuit_breaker(line: &CommandLine, p: &Places<'_>) -> Option<String> {
    let ctx = Ctx {
        ws: &p.ws,
        home: &p.home,
    };
    check_line(line, &ctx, Some(Cow::Borrowed(&p.cwd)))
}

fn check_line<'c>(
    line: &CommandLine,
    ctx: &Ctx<'c>,
    mut cwd: Option<Cow<'c, str>>,
) -> Option<String> {
    for f in &line.functions {
        let calls_itself = line
            .subs
            .get(f.body.clone())
            .unwrap_or(&[])
            .iter()
            .any(|s| {
                s.deny_starts.iter().any(|&i| {
                    s.words
                        .get(i)
                        .is_some_and(|w| program_name(&w.text) == f.name)
                })
            });
        if f.concurrent && calls_itself {
            return Some(format!(
                "fork bomb: function `{}` starts copies of itself",
                f.name
            ));
        }
    }
    for sub in &line.subs {
        if let Some(why) = check_sub(sub, ctx, cwd.as_deref()) {
            return Some(format!("{why} (`{}`)", short(&sub.text())));
        }
        for n in &sub.nested {
            if let Some(why) = check_line(n, ctx, cwd.clone()) {
                return Some(why);
            }
        }
        cwd = next_cwd(sub, ctx, cwd);
    }
    None
}

fn short(text: &str) -> String {
    const MAX: usize = 80;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let mut s: String = text.chars().take(MAX).collect();
    s.push('…');
    s
}

/// Follows `cd` so that `cd / && rm -rf *` is read as `rm -rf /*`. Unknown after `cd $X`.
fn next_cwd<'c>(
    sub: &SubCommand,
    ctx: &Ctx<'c>,
    cwd: Option<Cow<'c, str>>,
) -> Option<Cow<'c, str>> {
    let start = sub
        .deny_starts
        .iter()
        .copied()
        .find(|&i| sub.words.get(i).is_some_and(|w| !w.assignment))?;
    let cmd = sub.words.get(start)?;
    if !matches!(program_name(&cmd.text), "cd" | "pushd" | "popd") {
        return cwd;
    }
    if program_name(&cmd.text) == "popd" {
        return None;
    }
    let target = sub
        .words
        .get(start + 1..)
        .unwrap_or(&[])
        .iter()
        .find(|w| !w.text.starts_with('-') || w.text == "-");
    match target {
        None => Some(Cow::Borrowed(ctx.home)),
        Some(w) if w.text == "-" => None,
        Some(w) => {
            let path = expand_known(w, ctx, cwd.as_deref())?;
            if path.starts_with('/') {
                Some(Cow::Owned(resolve("/", &path, false)))
            } else {
                cwd.map(|c| Cow::Owned(resolve(&c, &path, false)))
            }
        }
    }
}

/// Replaces `~`, `$HOME`, `${HOME}`, `$PWD`, `$(pwd)`; None if other expansions remain.
fn expand_known(w: &Word, ctx: &Ctx<'_>, cwd: Option<&str>) -> Option<String> {
    // `~user` stays as written.
    let mut t = expand_home(&w.text, Some(ctx.home)).map_or_else(|| w.text.to_string(), Into::into);
    for (var, value) in [
        ("${HOME}", Some(ctx.home)),
        ("$HOME", Some(ctx.home)),
        ("${PWD}", cwd),
        ("$PWD", cwd),
        ("$(pwd)", cwd),
        ("`pwd`", cwd),
    ] {
        let Some(rest) = t.strip_prefix(var) else {
            continue;
        };
        // `$HOMEDIR` is another variable.
        if !var.ends_with(['}', ')', '`'])
            && rest.starts_with(|c: char| c == '_' || c.is_ascii_alphanumeric())
        {
            continue;
        }
        let value = value?;
        t = format!("{value}{rest}");
        break;
    }
    if t.contains(['$', '`']) && (w.param || w.cmdsub) {
        None
    } else {
        Some(t)
    }
}

/// Removes `$X`, `${...}`, `$(...)` and backticks: what the path is if they are all empty.
fn strip_expansions(t: &str) -> String {
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match (c, chars.get(i + 1)) {
            ('$', Some('{' | '(')) => {
                let (open, close) = if chars.get(i + 1) == Some(&'{') {
                    ('{', '}')
                } else {
                    ('(', ')')
                };
                let mut depth = 0usize;
                i += 1;
                while let Some(&d) = chars.get(i) {
                    i += 1;
                    if d == open {
                        depth += 1;
                    } else if d == close {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                }
            }
            ('$', Some(n)) if *n == '_' || n.is_ascii_alphanumeric() || "@*#?$!-".contains(*n) => {
                i += 2;
                if n.is_ascii_alphabetic() || *n == '_' {
                    while chars
                        .get(i)
                        .is_some_and(|d| *d == '_' || d.is_ascii_alphanumeric())
                    {
                        i += 1;
                    }
                }
            }
            ('`', _) => {
                i += 1;
                while chars.get(i).is_some_and(|d| *d != '`') {
                    i += 1;
                }
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// A component made only of wildcards and dots (`*`, `.*`): deleting it deletes the parent's
/// contents, which is as bad as deleting the parent.
fn is_wild_only(c: &str) -> bool {
    c.contains(['*', '?']) && c.chars().all(|ch| matches!(ch, '*' | '?' | '.'))
}

/// Why deleting (or chmod-ing) `w` recursively is catastrophic, if it is.
fn dangerous_target(w: &Word, ctx: &Ctx<'_>, cwd: Option<&str>) -> Option<String> {
    let t = w.text.as_ref();
    if let Some(user) = t.strip_prefix('~')
        && !user.is_empty()
        && !user.starts_with('/')
    {
        let rest = user.split_once('/').map_or("", |(_, r)| r);
        if rest.split('/').all(|c| c.is_empty() || is_wild_only(c)) {
            return Some("recursive delete of another user's home directory".to_string());
        }
        return None;
    }
    let path = match expand_known(w, ctx, cwd) {
        Some(p) => p,
        None => {
            // `rm -rf "$DIR/"*` with DIR unset is `rm -rf /*`.
            if t.contains(":?") {
                return None;
            }
            let stripped = strip_expansions(t);
            let path = strip_wild(resolve("/", &stripped, false));
            return (stripped.starts_with('/') && path == "/")
                .then(|| "recursive delete of `/` if a variable is empty".to_string());
        }
    };
    let path = if path.starts_with('/') {
        resolve("/", &path, false)
    } else {
        match cwd {
            Some(c) => resolve(c, &path, false),
            None => {
                let local = path
                    .split('/')
                    .all(|c| c.is_empty() || c == "." || c == ".." || is_wild_only(c));
                return local.then(|| {
                    "recursive delete of the current directory after `cd` to an unknown place"
                        .to_string()
                });
            }
        }
    };
    let path = strip_wild(path);
    match path.as_str() {
        "/" => Some("recursive delete of `/`".to_string()),
        top if top.matches('/').count() == 1 => {
            Some(format!("recursive delete of top-level directory `{top}`"))
        }
        p if ctx.home != "/" && is_within(ctx.home, p) => {
            Some("recursive delete of the home directory".to_string())
        }
        p if is_within(ctx.ws, p) => Some("recursive delete of the workspace root".to_string()),
        _ => None,
    }
}

/// Drops trailing wildcard-only segments of a normalised path (`/a/*/.*` is `/a`).
fn strip_wild(mut path: String) -> String {
    while let Some((parent, last)) = path.rsplit_once('/')
        && is_wild_only(last)
    {
        let keep = parent.len().max(1);
        path.truncate(keep);
    }
    path
}

/// Programs checked when a command name is a glob (`/bin/r? -rf /`).
const CHECKED: &[&str] = &[
    "rm",
    "chmod",
    "chown",
    "chgrp",
    "mkfs",
    "mke2fs",
    "mkdosfs",
    "mkntfs",
    "wipefs",
    "blkdiscard",
    "fdisk",
    "sfdisk",
    "cfdisk",
    "gdisk",
    "sgdisk",
    "parted",
    "shred",
    "dd",
    "tee",
    "cp",
    "mv",
    "install",
    "find",
    "mkfs.ext4",
    "mkfs.ext3",
    "mkfs.xfs",
    "mkfs.btrfs",
    "mkfs.vfat",
];

/// The programs a command word may name.
fn programs<'w>(w: &'w Word<'_>) -> impl Iterator<Item = &'w str> {
    let base = program_name(&w.text);
    let checked = w.glob.then(|| {
        CHECKED
            .iter()
            .copied()
            .filter(move |name| word_glob(base, name))
    });
    (!w.glob)
        .then_some(base)
        .into_iter()
        .chain(checked.into_iter().flatten())
}

fn check_sub(sub: &SubCommand, ctx: &Ctx<'_>, cwd: Option<&str>) -> Option<String> {
    for r in &sub.redirects {
        if r.writes_file() && is_block_device(&r.target) {
            return Some(format!(
                "output redirected onto block device `{}`",
                r.target
            ));
        }
    }
    for &s in sub.deny_starts.iter() {
        let Some(cmd) = sub.words.get(s) else {
            continue;
        };
        if cmd.assignment {
            continue;
        }
        let args = sub.words.get(s + 1..).unwrap_or(&[]);
        for prog in programs(cmd) {
            if let Some(why) = check_program(prog, args, ctx, cwd) {
                return Some(why);
            }
        }
    }
    None
}

/// Operands and whether the flags ask for recursion (`recursive` reads one flag).
fn scan_flags<'a, 's>(
    args: &'a [Word<'s>],
    recursive: impl Fn(&str) -> bool,
) -> (bool, Vec<&'a Word<'s>>) {
    let mut rec = false;
    let mut operands = Vec::new();
    let mut done = false;
    for a in args {
        let t = a.text.as_ref();
        if !done && t == "--" {
            done = true;
        } else if !done && t.len() > 1 && t.starts_with('-') {
            rec |= recursive(t);
        } else {
            operands.push(a);
        }
    }
    (rec, operands)
}

fn long_prefix(t: &str, full: &str, min: usize) -> bool {
    let name = t.split('=').next().unwrap_or(t);
    name.len() >= min && full.starts_with(name)
}

fn check_program(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: Option<&str>) -> Option<String> {
    let operands_on_device = |args: &[Word]| {
        args.iter()
            .any(|a| !a.text.starts_with('-') && dev_name(&a.text).is_some())
    };
    match prog {
        "rm" => {
            if args
                .iter()
                .any(|a| long_prefix(&a.text, "--no-preserve-root", 6))
            {
                return Some("rm --no-preserve-root".to_string());
            }
            let (rec, targets) = scan_flags(args, |t| {
                if t.starts_with("--") {
                    long_prefix(t, "--recursive", 3)
                } else {
                    t.contains(['r', 'R'])
                }
            });
            if rec {
                targets.iter().find_map(|w| dangerous_target(w, ctx, cwd))
            } else {
                None
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let (rec, targets) = scan_flags(args, |t| {
                if t.starts_with("--") {
                    long_prefix(t, "--recursive", 5)
                } else {
                    t.contains('R')
                }
            });
            let why = if rec {
                targets.iter().find_map(|w| dangerous_target(w, ctx, cwd))
            } else {
                None
            };
            why.map(|w| format!("{prog} -R: {}", w.replace("recursive delete of ", "")))
        }
        p if p == "mkfs"
            || p.starts_with("mkfs.")
            || matches!(p, "mke2fs" | "mkdosfs" | "mkntfs") =>
        {
            Some(format!("`{p}` creates a file system, erasing the device"))
        }
        "wipefs" | "blkdiscard" => Some(format!("`{prog}` erases a device")),
        "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" => {
            let listing = args
                .iter()
                .any(|a| matches!(a.text.as_ref(), "-l" | "--list"));
            (!listing && operands_on_device(args)).then(|| format!("`{prog}` repartitions a disk"))
        }
        "shred" => args
            .iter()
            .filter_map(|a| dev_name(&a.text))
            .find(|d| !is_harmless_device(d))
            .map(|d| format!("shred of device `/dev/{d}`")),
        "dd" => args
            .iter()
            .filter_map(|a| a.text.strip_prefix("of="))
            .filter_map(dev_name)
            .find(|d| !is_harmless_device(d))
            .map(|d| format!("dd onto device `/dev/{d}`")),
        "tee" => args
            .iter()
            .find(|a| is_block_device(&a.text))
            .map(|a| format!("tee onto block device `{}`", a.text)),
        "cp" | "mv" | "install" => args
            .iter()
            .rev()
            .find(|a| !a.text.starts_with('-'))
            .filter(|a| is_block_device(&a.text))
            .map(|a| format!("{prog} onto block device `{}`", a.text)),
        "find" => {
            let deletes = args.iter().any(|a| a.text == "-delete");
            let roots: Vec<&Word> = args
                .iter()
                .take_while(|a| !a.text.starts_with(['-', '(', '!']))
                .collect();
            if !deletes {
                return None;
            }
            let dot = Word::bare(Cow::Borrowed("."));
            let roots = if roots.is_empty() { vec![&dot] } else { roots };
            roots
                .iter()
                .find_map(|w| dangerous_target(w, ctx, cwd))
                .map(|w| format!("find -delete: {w}"))
        }
        _ => None,
    }
}
