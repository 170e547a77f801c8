//! The built-in read-only command set: commands that may run without asking because they only
//! read, and only inside the workspace.
//!
//! "Read-only" has to survive the options that turn a reader into a writer or a runner
//! (`sort -o`, `find -delete`, `rg --pre`, `git -c core.pager=...`, `tree -o`), output
//! redirection (`cat a > b`), and paths that reach outside the workspace (`cat ../../etc/passwd`,
//! `cat ~/.ssh/id_rsa`, `cat $HOME/x`). Anything not understood is not read-only.

use super::lex::Word;
use super::paths::{Places, is_harmless_sink};
use super::wrappers::system_program;
use super::{CommandLine, Redirect, RedirectKind, SubCommand};
use crate::text_path::{expand_home, is_within, resolve};

struct Ctx<'a> {
    ws: &'a str,
    cwd: &'a str,
    home: Option<&'a str>,
}

impl Ctx<'_> {
    /// A path argument (or option value) stays inside the workspace.
    fn path_ok(&self, p: &str) -> bool {
        // `~user` is another user's home; `~` is outside unless home is inside.
        expand_home(p, self.home).is_some_and(|p| is_within(&resolve(self.cwd, &p, true), self.ws))
    }

    /// Every argument, and every option value, is a path inside the workspace.
    fn args_ok(&self, args: &[&str]) -> bool {
        args.iter().all(|a| self.arg_ok(a))
    }

    fn arg_ok(&self, a: &str) -> bool {
        let candidate = if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((_, v)) => v,
                None => return true,
            }
        } else if a.len() > 1 && a.starts_with('-') {
            // `-f/etc/passwd`: the value is attached to the option letter.
            a.char_indices()
                .nth(2)
                .and_then(|(i, _)| a.get(i..))
                .unwrap_or("")
        } else {
            a
        };
        candidate.is_empty() || self.path_ok(candidate)
    }
}

/// See [`super::is_read_only`].
pub(crate) fn is_read_only(line: &CommandLine, p: &Places<'_>) -> bool {
    // Past the analysis limit a line is not read as closely as a person would (and a wildcard
    // allow rule no longer covers it): it is never read-only either.
    if line.subs.is_empty()
        || line.len > super::MAX_WILDCARD_LINE
        || line.is_opaque()
        || !is_within(&p.cwd, &p.ws)
    {
        return false;
    }
    let ctx = Ctx {
        // Home counts as inside only when it is inside the workspace; otherwise `~` is rejected.
        home: (p.home_absolute && is_within(&p.home, &p.ws)).then_some(&*p.home),
        ws: &p.ws,
        cwd: &p.cwd,
    };
    line.subs.iter().all(|s| sub_read_only(s, &ctx))
}

fn sub_read_only(sub: &SubCommand, ctx: &Ctx<'_>) -> bool {
    if sub.is_opaque() || !sub.redirects.iter().all(|r| redirect_ok(r, ctx)) {
        return false;
    }
    if sub.words.is_empty() || sub.noop {
        return true;
    }
    let Some(&start) = sub.allow_starts.last() else {
        return false;
    };
    let Some(cmd) = sub.words.get(start) else {
        return false;
    };
    if cmd.assignment || cmd.expands() || cmd.glob || cmd.brace {
        return false;
    }
    let words = sub.words.get(start + 1..).unwrap_or(&[]);
    // Most commands have few arguments: no vector for them.
    let mut inline = [""; 16];
    let heap: Vec<&str>;
    let args: &[&str] = match inline.get_mut(..words.len()) {
        Some(slots) => {
            for (slot, w) in slots.iter_mut().zip(words) {
                *slot = &w.text;
            }
            slots
        }
        None => {
            heap = words.iter().map(|w: &Word| w.text.as_ref()).collect();
            &heap
        }
    };
    let name = system_program(&cmd.text);
    // An unquoted glob may expand to an option (a file named `-delete`):
    // after a command that has options which write or run, it is not
    // read-only.
    if super::own_decision::RISKY.contains(&name) && words.iter().any(|w| w.glob) {
        return false;
    }
    // Text is checked as written; a word the shell expands (`$HOME/x`) could be any path.
    if words.iter().any(Word::expands) && !NO_PATHS.contains(&name) {
        return false;
    }
    command_ok(name, args, ctx)
}

/// Commands whose arguments are not paths and which write nothing.
const NO_PATHS: &[&str] = &[
    "echo", "pwd", "whoami", "true", "false", "printenv", "basename", "dirname", "which", "uname",
    "id", "nproc",
];

fn redirect_ok(r: &Redirect, ctx: &Ctx<'_>) -> bool {
    match r.kind {
        RedirectKind::Input => ctx.path_ok(&r.target),
        RedirectKind::DupInput | RedirectKind::DupOutput if super::is_fd_target(&r.target) => true,
        RedirectKind::HereDoc { expands: false } | RedirectKind::HereString => true,
        RedirectKind::HereDoc { expands: true } => false,
        _ => is_harmless_sink(&r.target),
    }
}

fn is_long_prefix(arg: &str, full: &str, min: usize) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    name.len() >= min && full.starts_with(name)
}

/// A short-option cluster (`-no`) containing `letter`.
fn short_has(arg: &str, letter: char) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg.chars().skip(1).any(|c| c == letter)
}

fn command_ok(name: &str, args: &[&str], ctx: &Ctx<'_>) -> bool {
    match name {
        n if NO_PATHS.contains(&n) => true,
        "ls" | "cat" | "head" | "tail" | "wc" | "stat" | "du" | "df" | "cut" | "realpath"
        | "readlink" | "diff" | "cmp" | "md5sum" | "sha1sum" | "sha224sum" | "sha256sum"
        | "sha384sum" | "sha512sum" | "b2sum" | "cksum" | "test" | "[" | "grep" | "egrep"
        | "fgrep" => ctx.args_ok(args),
        "rg" => !args.iter().any(|a| a.starts_with("--pre")) && ctx.args_ok(args),
        "sort" => {
            !args.iter().any(|a| {
                short_has(a, 'o')
                    || is_long_prefix(a, "--output", 3)
                    || is_long_prefix(a, "--compress-program", 4)
            }) && ctx.args_ok(args)
        }
        "uniq" => uniq_operands(args) <= 1 && ctx.args_ok(args),
        // `-o` writes the listing to a file; `-R` writes 00Tree.html into every directory.
        "tree" => !args.iter().any(|a| a.starts_with("-o") || *a == "-R") && ctx.args_ok(args),
        "file" => {
            !args
                .iter()
                .any(|a| short_has(a, 'C') || is_long_prefix(a, "--compile", 4))
                && ctx.args_ok(args)
        }
        "find" => {
            const WRITES: &[&str] = &[
                "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ];
            !args.iter().any(|a| WRITES.contains(a)) && ctx.args_ok(args)
        }
        "date" => date_ok(args, ctx),
        "env" => env_ok(args),
        "git" => git_ok(args, ctx),
        _ => false,
    }
}

/// `uniq IN OUT` writes OUT: count operands, skipping option values.
fn uniq_operands(args: &[&str]) -> usize {
    let mut n = 0;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if matches!(*a, "-f" | "-s" | "-w") {
            it.next();
        } else if *a == "-" || !a.starts_with('-') {
            n += 1;
        }
    }
    n
}

/// `date` only prints; `-s`, `--set` or an operand other than `+FORMAT` sets the clock.
fn date_ok(args: &[&str], ctx: &Ctx<'_>) -> bool {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a.starts_with("--") {
            if is_long_prefix(a, "--set", 4) {
                return false;
            }
            if matches!(*a, "--date" | "--file" | "--reference") {
                it.next();
            }
        } else if a.len() > 1 && a.starts_with('-') {
            if short_has(a, 's') {
                return false;
            }
            if a.len() == 2 && (a.ends_with('d') || a.ends_with('f') || a.ends_with('r')) {
                it.next();
            }
        } else if !a.starts_with('+') {
            return false;
        }
    }
    ctx.args_ok(args)
}

/// `env` with no command only prints the environment.
fn env_ok(args: &[&str]) -> bool {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "-i" | "-0" | "-v" | "-" | "--ignore-environment" | "--null" | "--debug" => {}
            "-u" | "--unset" => {
                it.next();
            }
            a if a.starts_with("--unset=") || (a.starts_with("-u") && a.len() > 2) => {}
            a if a.contains('=') && !a.starts_with('-') => {}
            _ => return false,
        }
    }
    true
}

fn git_ok(args: &[&str], ctx: &Ctx<'_>) -> bool {
    let mut i = 0;
    loop {
        let Some(a) = args.get(i) else { return false };
        match *a {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--paginate"
            | "-p"
            | "--no-replace-objects"
            | "--literal-pathspecs" => i += 1,
            "-C" | "--git-dir" | "--work-tree" => {
                if !args.get(i + 1).is_some_and(|d| ctx.path_ok(d)) {
                    return false;
                }
                i += 2;
            }
            a if a.starts_with("--git-dir=") || a.starts_with("--work-tree=") => {
                if !ctx.arg_ok(a) {
                    return false;
                }
                i += 1;
            }
            // `-c core.pager=...`, `--exec-path`, `--config-env` and the unknown can run programs.
            a if a.starts_with('-') => return false,
            _ => break,
        }
    }
    let sub = args.get(i).copied().unwrap_or("");
    let rest = args.get(i + 1..).unwrap_or(&[]);
    match sub {
        "status" => ctx.args_ok(rest),
        "log" | "diff" | "show" => {
            !rest
                .iter()
                .any(|a| is_long_prefix(a, "--output", 4) || is_long_prefix(a, "--ext-diff", 4))
                && ctx.args_ok(rest)
        }
        "branch" => branch_ok(rest, ctx),
        _ => false,
    }
}

/// `git branch` only when listing: no operand unless `--list`, and only listing options.
fn branch_ok(args: &[&str], ctx: &Ctx<'_>) -> bool {
    const LISTING: &[&str] = &[
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-v",
        "-vv",
        "--verbose",
        "-l",
        "--list",
        "--show-current",
        "--no-color",
        "--color",
        "--column",
        "--no-column",
        "-i",
        "--ignore-case",
        "--no-abbrev",
    ];
    const WITH_VALUE: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
    ];
    let listing = args.iter().any(|a| matches!(*a, "-l" | "--list"));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if WITH_VALUE.contains(a) {
            it.next();
        } else if LISTING.contains(a)
            || WITH_VALUE
                .iter()
                .any(|w| a.strip_prefix(w).is_some_and(|r| r.starts_with('=')))
            || a.starts_with("--color=")
            || a.starts_with("--abbrev=")
        {
        } else if a.starts_with('-') || !listing {
            return false;
        }
    }
    ctx.args_ok(args)
}
