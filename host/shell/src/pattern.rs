//! Rule patterns: word-based globs such as `npm run *`, `git status`, `rm -rf *`.
//!
//! Matching works on words, not on raw text, so quoting cannot make a command look different to
//! the matcher than to the shell, and `npm run *` does not match `npm runner`. Both sides become
//! sequences of characters with a word separator (`SEP`) that no character can equal; `*`
//! matches any run, separators included. A trailing ` *` also matches nothing (`ls *` matches
//! `ls`). For deny rules the match is deliberately loose (whitespace inside a quoted word counts
//! as a word break, and short flags are compared as a set, so `rm -rf *` also catches
//! `rm -r -f /` and `rm --recursive --force ~`); for allow rules it is strict.

use std::borrow::Borrow;

use super::forms::{DenyForm, first_word};
use super::wrappers::program_name;
use super::{CommandLine, SubCommand};

/// Separates words. Outside the Unicode range, so no input character equals it.
pub(super) const SEP: u32 = 0x11_0000;
/// A `*` in a pattern.
const STAR: u32 = 0x11_0001;
/// A `?` (any one character) in a command-name glob.
const ANY: u32 = 0x11_0002;

/// A compiled rule pattern. Compile once, match many times.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    /// Alternatives for allow matching (with and without the trailing ` *`).
    strict: Vec<Vec<u32>>,
    /// For each of `strict`: its first word and that word's length in units, when the word is
    /// literal. Globbing compares units exactly up to the first `*`, and a literal first word is
    /// followed by a separator or the end, so a form matches only if its first word is this one:
    /// a string comparison rejects the rest before any globbing.
    strict_heads: Vec<Option<(String, usize)>>,
    /// Alternatives for deny matching.
    loose: Vec<Vec<u32>>,
    has_star: bool,
    /// The first word when it has no `*`, for command names that are globs (`/bin/r? -rf /`).
    first_literal: Option<String>,
    /// Flag set and remaining words, when the pattern has flags (deny only).
    norm: Option<Norm>,
}

#[derive(Debug, Clone)]
struct Norm {
    flags: Vec<String>,
    rest: Vec<Vec<u32>>,
}

pub(super) fn is_ifs(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

/// Lexes a pattern into words of units; `*` is a wildcard unless escaped with `\`.
fn lex_pattern(src: &str) -> Vec<Vec<u32>> {
    let mut words = Vec::new();
    let mut cur: Vec<u32> = Vec::new();
    let mut in_word = false;
    let mut it = src.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            c if is_ifs(c) || c == '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\\' => {
                if let Some(n) = it.next() {
                    cur.push(u32::from(n));
                }
                in_word = true;
            }
            '\'' | '"' => {
                in_word = true;
                while let Some(q) = it.next() {
                    if q == c {
                        break;
                    }
                    if c == '"'
                        && q == '\\'
                        && it
                            .peek()
                            .is_some_and(|n| matches!(n, '"' | '\\' | '$' | '`'))
                    {
                        if let Some(n) = it.next() {
                            cur.push(u32::from(n));
                        }
                        continue;
                    }
                    cur.push(if q == '*' { STAR } else { u32::from(q) });
                }
            }
            '*' => {
                cur.push(STAR);
                in_word = true;
            }
            c => {
                cur.push(u32::from(c));
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    // Claude Code's `npm run test:*` means `npm run test *`.
    if let Some(last) = words.last_mut()
        && last.len() >= 2
        && last.ends_with(&[u32::from(':'), STAR])
    {
        last.truncate(last.len() - 2);
        if last.is_empty() {
            words.pop();
        }
        words.push(vec![STAR]);
    }
    words
}

fn join(words: &[Vec<u32>]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(SEP);
        }
        out.extend_from_slice(w);
    }
    out
}

/// `a b *` matches `a b` and `a b ...`: two alternatives.
fn alternatives(words: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let tail = words.len() >= 2 && words.last().is_some_and(|w| w.as_slice() == [STAR]);
    if !tail {
        return if words.is_empty() {
            Vec::new()
        } else {
            vec![join(words)]
        };
    }
    let base = words.get(..words.len() - 1).unwrap_or(&[]);
    let exact = join(base);
    let mut open = exact.clone();
    open.push(SEP);
    open.push(STAR);
    vec![exact, open]
}

/// Splits words further at whitespace inside them (deny matching ignores quoting of spaces).
fn loosen(words: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for w in words {
        for piece in w.split(|&u| char::from_u32(u).is_some_and(is_ifs)) {
            if !piece.is_empty() {
                out.push(piece.to_vec());
            }
        }
    }
    out
}

fn literal(word: &[u32]) -> Option<String> {
    word.iter()
        .map(|&u| if u == STAR { None } else { char::from_u32(u) })
        .collect()
}

pub(super) fn units(s: &str) -> impl Iterator<Item = u32> + '_ {
    s.chars().map(u32::from)
}

/// Flags compared as a set for deny rules; a few long spellings map to the short one.
fn canonical_flag(cmd: &str, flag: String) -> String {
    let long_prefix = |full: &str, min: usize| flag.len() >= min && full.starts_with(&*flag);
    let canon = match cmd {
        "rm" if flag == "-R" || long_prefix("--recursive", 3) => "-r",
        "rm" if long_prefix("--force", 3) => "-f",
        "cp" if flag == "-R" || long_prefix("--recursive", 5) => "-r",
        "chmod" | "chown" | "chgrp" if long_prefix("--recursive", 5) => "-R",
        _ => return flag,
    };
    canon.to_owned()
}

/// Splits arguments into a sorted flag set and the other words. `-rf` is `-r -f`.
pub(super) fn split_flags<'a>(
    cmd: &str,
    args: impl Iterator<Item = Option<&'a str>>,
) -> (Vec<String>, Vec<usize>) {
    let mut flags = Vec::new();
    let mut rest = Vec::new();
    let mut done = false;
    for (i, a) in args.enumerate() {
        match a {
            Some("--") if !done => done = true,
            Some(f) if !done && f.len() >= 2 && f.starts_with('-') => {
                let body = f.get(1..).unwrap_or("");
                if !f.starts_with("--")
                    && body.len() > 1
                    && body.chars().all(|c| c.is_ascii_alphabetic())
                {
                    for c in body.chars() {
                        let mut short = String::with_capacity(1 + c.len_utf8());
                        short.push('-');
                        short.push(c);
                        flags.push(canonical_flag(cmd, short));
                    }
                } else {
                    flags.push(canonical_flag(cmd, f.to_owned()));
                }
            }
            _ => rest.push(i),
        }
    }
    flags.sort_unstable();
    flags.dedup();
    (flags, rest)
}

impl Pattern {
    /// Compiles a pattern. Words are split on whitespace; quotes are removed as in the shell;
    /// `*` is a wildcard anywhere (write `\*` for a literal star); a trailing ` *` or `:*` means
    /// "these words, then anything or nothing".
    pub fn parse(src: &str) -> Pattern {
        let words = lex_pattern(src);
        let has_star = words.iter().flatten().any(|&u| u == STAR);
        let strict = alternatives(&words);
        let lwords = loosen(&words);
        let mut loose = alternatives(&lwords);
        let first = lwords.first().and_then(|w| literal(w));
        if let Some(f) = &first
            && f.contains('/')
        {
            let mut based = lwords.clone();
            if let Some(w) = based.first_mut() {
                *w = units(program_name(f)).collect();
            }
            loose.extend(alternatives(&based));
        }
        let norm = first.as_deref().and_then(|f| {
            let cmd = program_name(f);
            let args = lwords
                .iter()
                .skip(1)
                .map(|w| literal(w))
                .collect::<Vec<_>>();
            let (flags, rest_idx) = split_flags(cmd, args.iter().map(|a| a.as_deref()));
            if flags.is_empty() {
                return None;
            }
            let mut rest: Vec<Vec<u32>> = vec![units(cmd).collect()];
            rest.extend(rest_idx.iter().filter_map(|&i| lwords.get(i + 1).cloned()));
            Some(Norm {
                flags,
                rest: alternatives(&rest),
            })
        });
        let strict_heads = strict
            .iter()
            .map(|alt| {
                let head = first_word(alt);
                let text: Option<String> = head
                    .iter()
                    .map(|&u| if u == ANY { None } else { char::from_u32(u) })
                    .collect();
                text.map(|t| (t, head.len()))
            })
            .collect();
        Pattern {
            source: src.to_string(),
            strict,
            strict_heads,
            loose,
            has_star,
            first_literal: first.as_deref().map(|f| program_name(f).to_string()),
            norm,
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True if the pattern contains a `*` wildcard.
    pub fn has_wildcard(&self) -> bool {
        self.has_star
    }

    fn matches_deny_form(&self, f: &DenyForm) -> bool {
        if self.loose.iter().any(|p| glob(p, f.units.as_slice())) {
            return true;
        }
        if let (Some(first), Some((g, rest))) = (&self.first_literal, &f.glob_cmd)
            && word_glob(g, first)
        {
            let mut subject: Vec<u32> = units(first).collect();
            subject.extend_from_slice(rest);
            if self.loose.iter().any(|p| glob(p, subject.as_slice())) {
                return true;
            }
        }
        if let (Some(n), Some((flags, rest))) = (&self.norm, &f.norm) {
            return is_subset(&n.flags, flags) && n.rest.iter().any(|p| glob(p, rest.as_slice()));
        }
        false
    }

    /// The first words a subcommand must start with for a deny match, each as units (one per
    /// character, as [`Head::Units`](crate::Head::Units)), or `None` when the first word holds a
    /// `*` (any command may match). See [`CommandLine::deny_heads`].
    pub fn deny_heads(&self) -> Option<Vec<Vec<u32>>> {
        let rest = self.norm.iter().flat_map(|n| n.rest.iter());
        heads(self.loose.iter().chain(rest))
    }

    /// The first words a subcommand must start with to be covered (see
    /// [`CommandLine::allow_heads`]), or `None` when the first word holds a `*`.
    pub fn allow_heads(&self) -> Option<Vec<Vec<u32>>> {
        heads(self.strict.iter())
    }

    fn covers(&self, sub: &SubCommand) -> bool {
        sub.any_allow_form(|f| {
            self.strict
                .iter()
                .zip(&self.strict_heads)
                .any(|(p, head)| match head {
                    Some((word, len)) => {
                        f.first() == word
                            && glob_from(p.get(*len..).unwrap_or(&[]), &f, f.after_first())
                    }
                    None => glob(p, &f),
                })
        })
    }
}

/// The first word of each alternative, or `None` if one of them starts with a wildcard. Until
/// its first `*`, [`glob`] compares units exactly, so a subject matched by an alternative whose
/// first word is literal starts with that same word.
fn heads<'a>(alts: impl Iterator<Item = &'a Vec<u32>>) -> Option<Vec<Vec<u32>>> {
    let mut out: Vec<Vec<u32>> = Vec::new();
    for alt in alts {
        let head = first_word(alt);
        if head.contains(&STAR) {
            return None;
        }
        if !out.iter().any(|h| h.as_slice() == head) {
            out.push(head.to_vec());
        }
    }
    Some(out)
}

fn is_subset(small: &[String], big: &[String]) -> bool {
    small.iter().all(|f| big.binary_search(f).is_ok())
}

/// What [`glob`] matches against: a sequence of units read through a position that can be
/// saved and resumed, so a subject need not be laid out in memory.
pub(super) trait Units {
    type Pos: Copy;
    fn start(&self) -> Self::Pos;
    /// The unit at `at` and the position after it; `None` at the end.
    fn next(&self, at: Self::Pos) -> Option<(u32, Self::Pos)>;
}

impl Units for [u32] {
    type Pos = usize;

    fn start(&self) -> usize {
        0
    }

    fn next(&self, at: usize) -> Option<(u32, usize)> {
        self.get(at).map(|&u| (u, at + 1))
    }
}

/// Glob over units: `STAR` matches any run (word separators included), `ANY` one character;
/// the rest match exactly. Linear backtracking on the last star, so hostile globs stay cheap.
pub(super) fn glob<S: Units + ?Sized>(p: &[u32], s: &S) -> bool {
    glob_from(p, s, s.start())
}

/// [`glob`] of `p` against the units of `s` from `si` on.
fn glob_from<S: Units + ?Sized>(p: &[u32], s: &S, mut si: S::Pos) -> bool {
    let mut pi = 0usize;
    let mut back: Option<(usize, S::Pos)> = None;
    loop {
        let Some((su, after)) = s.next(si) else {
            return p
                .get(pi..)
                .is_some_and(|rest| rest.iter().all(|&u| u == STAR));
        };
        match p.get(pi) {
            Some(&STAR) => {
                // Stars to the end match whatever is left.
                if p.get(pi..)
                    .is_some_and(|rest| rest.iter().all(|&u| u == STAR))
                {
                    return true;
                }
                back = Some((pi, si));
                pi += 1;
                continue;
            }
            Some(&pu) if pu == su || (pu == ANY && su != SEP) => {
                pi += 1;
                si = after;
                continue;
            }
            _ => {}
        }
        // A star was set at a position with a unit after it, so there is one to skip.
        match back.and_then(|(bp, bs)| s.next(bs).map(|(_, next)| (bp, next))) {
            Some((bp, next)) => {
                pi = bp + 1;
                si = next;
                back = Some((bp, next));
            }
            None => return false,
        }
    }
}

/// Could the shell glob `g` (a command name such as `r?` or `/bin/r*`) name `name`? Bracket
/// expressions are read as "any character", which errs towards yes.
pub(crate) fn word_glob(g: &str, name: &str) -> bool {
    let mut p: Vec<u32> = Vec::new();
    let mut chars = g.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => p.push(STAR),
            '?' => p.push(ANY),
            '[' => {
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                }
                p.push(ANY);
            }
            c => p.push(u32::from(c)),
        }
    }
    let name: Vec<u32> = units(name).collect();
    glob(&p, name.as_slice())
}

/// For deny and ask rules: true if the pattern matches any subcommand, through every wrapper and
/// into nested command text.
pub fn matches_any_pattern(pattern: &Pattern, line: &CommandLine) -> bool {
    line.subs.iter().any(|sub| {
        sub.deny_forms()
            .iter()
            .any(|f| pattern.matches_deny_form(f))
            || sub.nested.iter().any(|n| matches_any_pattern(pattern, n))
    })
}

/// For allow rules: true only if every subcommand is covered by some pattern. A subcommand (or
/// line) with anything opaque is covered only by a pattern without `*`.
/// Accepts `&[Pattern]` or `&[&Pattern]`.
pub fn allowed_by_patterns<P: Borrow<Pattern>>(patterns: &[P], line: &CommandLine) -> bool {
    allowed_by_each(|| patterns.iter().map(Borrow::borrow), line)
}

/// [`allowed_by_patterns`] over the patterns `patterns` yields each time it is called.
pub fn allowed_by_each<'p, I: Iterator<Item = &'p Pattern>>(
    patterns: impl Fn() -> I,
    line: &CommandLine,
) -> bool {
    if line.subs.is_empty() {
        return false;
    }
    let line_opaque = !line.reasons.is_empty();
    line.subs.iter().all(|sub| {
        let opaque = line_opaque || sub.is_opaque();
        if sub.noop && !opaque {
            return true;
        }
        patterns().any(|p: &Pattern| !(opaque && p.has_star) && p.covers(sub))
    })
}
