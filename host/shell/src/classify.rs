//! Classifier: turns one simple command's words into a [`SubCommand`], deciding what is opaque
//! and collecting command text that something else will run.
//!
//! The point is that a command's effect is not always in its own words: `bash -c 'rm -rf /'`,
//! `eval "$x"`, `find . -exec rm {} +`, `xargs rm` and `$CMD -rf /` all run something the plain
//! words do not show. Each such construct is recorded as an opaque reason (so a wildcard allow
//! rule never covers it), and where the hidden command is text (`-c` strings, `eval`, `-exec`)
//! it is parsed so deny rules and circuit breakers still see it.

use std::cell::Cell;
use std::sync::OnceLock;

use super::evaluated::{self, Eval};
use super::interpreters;
use super::lex::{self, MAX_DEPTH, RawRedirect, Word};
use super::unread::{
    CODE_VARIABLE, COMPLETION, EVALUATED, EXPANDED_CODE, EXPANDED_TARGET, INTERPRETER_INPUT,
    SUBSTITUTED_COMMAND, VARIABLE_COMMAND,
};
use super::wrappers::{self, program_name};
use super::{CommandLine, Redirect, RedirectKind, SubCommand};

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ksh93", "mksh", "pdksh", "ash", "fish", "csh", "tcsh",
    "rbash", "yash", "posh",
];

struct Collect<'a, 'b, 's> {
    depth: usize,
    budget: &'b Cell<usize>,
    reasons: &'a mut Vec<String>,
    nested: &'a mut Vec<CommandLine<'s>>,
}

impl<'s> Collect<'_, '_, 's> {
    fn reason(&mut self, r: &str) {
        if !self.reasons.iter().any(|x| x == r) {
            self.reasons.push(r.to_string());
        }
    }

    /// Parses text that another program will run as shell commands.
    fn nested_text(&mut self, text: &str) {
        if self.depth + 1 > MAX_DEPTH {
            self.reason("nesting too deep to read");
            return;
        }
        // The text is made for this purpose (joined, unquoted): copy what is read from it.
        let nested = CommandLine::parse_at(text, self.depth + 1, self.budget);
        self.nested.push(nested.into_owned());
    }

    /// Parses the `$(...)` and backticks inside text bash evaluates later (a subscript, an
    /// arithmetic expression), however it was quoted here: `test -v 'a[$(rm -rf src)]'`.
    fn substitutions(&mut self, text: &str) {
        if !text.contains(['$', '`']) {
            return;
        }
        if self.depth + 1 > MAX_DEPTH {
            self.reason("nesting too deep to read");
            return;
        }
        self.nested
            .extend(lex::substitutions(text, self.depth + 1, self.budget));
    }

    /// An argument bash evaluates as `how`: its substitutions are read, and unless it can only
    /// compute a number, the part is unread.
    fn evaluated(&mut self, text: &str, how: Eval) {
        if !evaluated::inert(text, how) {
            self.reason(EVALUATED);
        }
        if evaluated::names_code_variable(text, how) {
            self.reason(CODE_VARIABLE);
        }
        self.substitutions(text);
    }

    fn nested_words(&mut self, words: &[Word<'s>]) {
        if words.is_empty() {
            return;
        }
        if self.depth + 1 > MAX_DEPTH {
            self.reason("nesting too deep to read");
            return;
        }
        let sub = build_sub(
            words.to_vec(),
            Vec::new(),
            Vec::new(),
            self.depth + 1,
            false,
            self.budget,
        );
        self.nested.push(CommandLine {
            subs: vec![sub],
            ..CommandLine::default()
        });
    }
}

fn word_reasons(w: &Word<'_>, c: &mut Collect<'_, '_, '_>) {
    if w.cmdsub {
        c.reason("command substitution");
    }
    if w.procsub {
        c.reason("process substitution");
    }
    if w.unterminated {
        c.reason("unterminated quote or substitution");
    }
    for r in w.reasons() {
        c.reason(r);
    }
}

/// Builds a subcommand from its words and redirections.
pub(crate) fn build_sub<'s>(
    mut words: Vec<Word<'s>>,
    redirs: Vec<RawRedirect<'s>>,
    mut reasons: Vec<String>,
    depth: usize,
    for_header: bool,
    budget: &Cell<usize>,
) -> SubCommand<'s> {
    let mut nested: Vec<CommandLine<'s>> = Vec::new();
    let mut redirects = Vec::with_capacity(redirs.len());
    {
        let mut c = Collect {
            depth,
            budget,
            reasons: &mut reasons,
            nested: &mut nested,
        };
        for w in &mut words {
            word_reasons(w, &mut c);
            c.nested.append(&mut w.take_nested());
        }
        // Leading assignments: `a[i]=1` evaluates its subscript.
        for w in words.iter().take_while(|w| w.assignment) {
            c.evaluated(
                &w.text,
                Eval::Assign {
                    integer: false,
                    nameref: false,
                },
            );
        }
        for r in redirs {
            let target = match r.target {
                None => {
                    c.reason("redirection without a target");
                    String::new()
                }
                Some(mut t) => {
                    word_reasons(&t, &mut c);
                    if r.kind != RedirectKind::HereString && (t.expands() || t.glob || t.brace) {
                        c.reason("redirection target only known at run time");
                    }
                    c.nested.append(&mut t.take_nested());
                    t.text.into_owned()
                }
            };
            if r.kind == (RedirectKind::HereDoc { expands: true }) {
                c.reason("here-document that expands");
            }
            redirects.push(Redirect {
                kind: r.kind,
                fd: r.fd,
                target,
            });
        }
    }

    let deny_starts = wrappers::deny_starts(&words);
    let allow_starts = wrappers::allow_starts(&words);
    let mut seen = Vec::new();
    {
        let mut c = Collect {
            depth,
            budget,
            reasons: &mut reasons,
            nested: &mut nested,
        };
        for &s in deny_starts.iter() {
            classify_at(&words, s, &redirects, &mut c);
            if let Some(w) = words.get(s)
                && !w.assignment
                && deny_starts.iter().any(|&t| t > s)
            {
                let name = program_name(&w.text).to_string();
                if wrappers::is_wrapper(&name) && !seen.contains(&name) {
                    seen.push(name);
                }
            }
        }
    }

    let noop = (for_header && reasons.is_empty())
        || (words.is_empty()
            && redirects
                .iter()
                .all(|r| !r.writes_file() || super::paths::is_harmless_sink(&r.target)));
    SubCommand {
        words,
        redirects,
        reasons,
        nested,
        deny_starts,
        allow_starts,
        deny_forms: OnceLock::new(),
        wrappers: seen,
        noop,
    }
}

/// Looks at the command that starts at word `s` (one of the wrapper-stripped views).
fn classify_at<'s>(
    words: &[Word<'s>],
    s: usize,
    redirects: &[Redirect],
    c: &mut Collect<'_, '_, 's>,
) {
    let Some(w) = words.get(s) else { return };
    if w.assignment {
        return;
    }
    if w.param {
        c.reason(VARIABLE_COMMAND);
    }
    if w.cmdsub || w.procsub {
        c.reason(SUBSTITUTED_COMMAND);
    }
    if w.glob {
        c.reason("glob in command name");
    }
    if w.brace {
        c.reason("brace expansion in command name");
    }
    let args = words.get(s + 1..).unwrap_or(&[]);
    let prog = program_name(&w.text);
    for (arg, how) in evaluated::evaluated(prog, args) {
        c.evaluated(&arg.text, how);
    }
    if DESTRUCTIVE.contains(&prog)
        && (prog != "find" || args.iter().any(|a| a.text == "-delete"))
        && args.iter().any(Word::expands)
    {
        c.reason(EXPANDED_TARGET);
    }
    if SHELLS.contains(&prog) {
        shell(args, c);
        return;
    }
    if interpreters::is_interpreter(prog) {
        if interpreters::reads_input(args) {
            c.reason(INTERPRETER_INPUT);
        }
        return;
    }
    match prog {
        "eval" => {
            c.reason("eval");
            if args.iter().any(Word::expands) {
                c.reason(EXPANDED_CODE);
            }
            let text: Vec<&str> = args.iter().map(|a| a.text.as_ref()).collect();
            c.nested_text(&text.join(" "));
        }
        "source" | "." => c.reason("sources a file"),
        "alias" => c.reason("alias definition"),
        "trap" => {
            if let Some(handler) = args.iter().find(|a| !a.text.starts_with('-')) {
                c.reason("trap handler");
                if handler.expands() {
                    c.reason(EXPANDED_CODE);
                }
                c.nested_text(&handler.text);
            }
        }
        "compgen" | "complete" if has_short(args, "CFW") => {
            c.reason(COMPLETION);
            for a in args {
                c.substitutions(&a.text);
            }
        }
        "mapfile" | "readarray" => {
            if let Some((callback, expands)) = option_value(args, 'C', &[]) {
                c.reason("mapfile runs a callback");
                if expands {
                    c.reason(EXPANDED_CODE);
                }
                c.nested_text(&callback);
            }
        }
        "enable" if has_short(args, "f") => c.reason("loads a builtin from a shared object"),
        "find" => find(args, c),
        "xargs" if wrappers::runs_command(words, s) => {
            c.reason("xargs runs a command with arguments from its input");
        }
        "exec" if !redirects.is_empty() && !wrappers::runs_command(words, s) => {
            c.reason("exec with only redirections rewires the shell");
        }
        "watch" if !args.iter().any(|a| a.text == "-x" || a.text == "--exec") => {
            c.reason("watch runs its command through sh -c");
            let starts = wrappers::next_starts_deny(words, s);
            if let Some(&first) = starts.iter().min() {
                let text: Vec<&str> = words
                    .get(first..)
                    .unwrap_or(&[])
                    .iter()
                    .map(|a| a.text.as_ref())
                    .collect();
                c.nested_text(&text.join(" "));
            }
        }
        "su" | "runuser" | "flock" | "script" => {
            if let Some((text, expands)) = option_value(args, 'c', &["--command"]) {
                c.reason("runs a command string");
                if expands {
                    c.reason(EXPANDED_CODE);
                }
                c.nested_text(&text);
            }
        }
        "env" => {
            if let Some((text, expands)) = option_value(args, 'S', &["--split-string"]) {
                c.reason("env -S splits a command string");
                if expands {
                    c.reason(EXPANDED_CODE);
                }
                c.nested_text(&text);
            }
        }
        _ => {}
    }
}

/// Whether an option word among `args` (before `--` or the first operand) holds one of the
/// short option `letters`.
fn has_short(args: &[Word<'_>], letters: &str) -> bool {
    args.iter()
        .map(|a| a.text.as_ref())
        .take_while(|t| t.starts_with('-') && *t != "--")
        .any(|t| !t.starts_with("--") && t.chars().skip(1).any(|ch| letters.contains(ch)))
}

/// Commands whose operands are destroyed or overwritten: named through an expansion, what
/// they destroy is only known at run time.
const DESTRUCTIVE: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "truncate", "mv", "cp", "ln", "install", "chmod", "chown",
    "chgrp", "dd", "tee", "rsync", "find", "wipefs", "mkfs",
];

/// The value of `-c X`, `-lc X`, `-cX`, `--command X` or `--command=X` among `args`, where
/// `short` is the option letter and `long` the long option names, and whether the shell expands
/// it before the other program parses it.
fn option_value(args: &[Word<'_>], short: char, long: &[&str]) -> Option<(String, bool)> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let t = a.text.as_ref();
        if t == "--" {
            return None;
        }
        if t.starts_with("--") {
            for l in long {
                if t == *l {
                    return it.next().map(|v| (v.text.to_string(), v.expands()));
                }
                if let Some(v) = t.strip_prefix(l).and_then(|r| r.strip_prefix('=')) {
                    return Some((v.to_string(), a.expands()));
                }
            }
            continue;
        }
        let Some(cluster) = t.strip_prefix('-') else {
            continue;
        };
        if let Some((at, _)) = cluster.char_indices().find(|&(_, ch)| ch == short) {
            let rest = cluster.get(at + short.len_utf8()..).unwrap_or("");
            if rest.is_empty() {
                return it.next().map(|v| (v.text.to_string(), v.expands()));
            }
            return Some((rest.to_string(), a.expands()));
        }
    }
    None
}

/// `sh -c STRING`, `bash -lc STRING`, a shell reading its input, or a shell running a script.
fn shell(args: &[Word<'_>], c: &mut Collect<'_, '_, '_>) {
    let mut saw_c = false;
    let mut saw_s = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_ref();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            i += if matches!(t, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            let body = t.get(1..).unwrap_or("");
            saw_c |= body.contains('c');
            saw_s |= body.contains('s');
            i += if body.contains('o') || body.contains('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if saw_c {
        c.reason("shell -c string");
        match args.get(i) {
            Some(text) => {
                if text.expands() {
                    c.reason(EXPANDED_CODE);
                }
                c.nested_text(&text.text);
            }
            None => c.reason("shell -c without a command string"),
        }
    } else if saw_s || args.get(i).is_none() {
        c.reason("shell reads commands from its input");
    }
}

fn find<'s>(args: &[Word<'s>], c: &mut Collect<'_, '_, 's>) {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.text.as_ref() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                c.reason("find runs a command (-exec)");
                let start = i;
                while args.get(i).is_some_and(|w| w.text != ";" && w.text != "+") {
                    i += 1;
                }
                c.nested_words(args.get(start..i).unwrap_or(&[]));
                i += 1;
            }
            "-delete" => c.reason("find -delete"),
            _ => {}
        }
    }
}
