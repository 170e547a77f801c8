//! Forms: how a subcommand reads to rule patterns, built on first use.
//!
//! A pattern is matched against words, never raw text, so quoting cannot make a command look
//! different to the matcher than to the shell. Each wrapper-stripped start of a subcommand gives
//! forms: for deny rules loosely (whitespace inside a word splits it, the command name is read
//! as its basename and as written, flags become a set), for allow rules strictly (the words
//! exactly as the shell passes them). The first word of each form is what the rule index
//! (`crate::index`) looks up, so a rule whose pattern starts with another word is never tried.

use super::CommandLine;
use super::lex::Word;
use super::pattern::{SEP, is_ifs, split_flags, units};
use super::wrappers::{program_name, system_program};

/// One way of reading a subcommand for deny matching.
#[derive(Debug, Clone)]
pub(crate) struct DenyForm {
    pub(super) units: Vec<u32>,
    /// The command word's glob and the units after it, when the command name is a glob.
    pub(super) glob_cmd: Option<(String, Vec<u32>)>,
    /// The flags as a sorted set and the other words, when this is the basename form.
    pub(super) norm: Option<(Vec<String>, Vec<u32>)>,
}

fn push_loose(out: &mut Vec<u32>, text: &str) {
    for piece in text.split(is_ifs) {
        if piece.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(SEP);
        }
        out.extend(units(piece));
    }
}

/// Deny forms for the command starting at word `s`: the command name as its basename (and as
/// written, when that differs), with flag normalisation on the basename form.
pub(crate) fn deny_forms(words: &[Word], s: usize) -> Vec<DenyForm> {
    let Some(cmd) = words.get(s) else {
        return Vec::new();
    };
    let args = words.get(s + 1..).unwrap_or(&[]);
    let base = program_name(&cmd.text);
    let mut rest_units = Vec::with_capacity(args.iter().map(|a| a.text.len() + 1).sum());
    for a in args {
        push_loose(&mut rest_units, &a.text);
    }
    let with_first = |first: &str| {
        let mut u = Vec::new();
        push_loose(&mut u, first);
        if !rest_units.is_empty() {
            if !u.is_empty() {
                u.push(SEP);
            }
            u.extend_from_slice(&rest_units);
        }
        u
    };
    let (flags, idx) = split_flags(base, args.iter().map(|a| Some(a.text.as_str())));
    let mut rest = Vec::new();
    push_loose(&mut rest, base);
    for i in idx {
        if let Some(a) = args.get(i) {
            push_loose(&mut rest, &a.text);
        }
    }
    let norm = Some((flags, rest));
    let glob_cmd = cmd.glob.then(|| {
        let mut after = Vec::new();
        if !rest_units.is_empty() {
            after.push(SEP);
            after.extend_from_slice(&rest_units);
        }
        (base.to_string(), after)
    });
    let mut forms = vec![DenyForm {
        units: with_first(base),
        glob_cmd,
        norm,
    }];
    if base != cmd.text {
        forms.push(DenyForm {
            units: with_first(&cmd.text),
            glob_cmd: None,
            norm: None,
        });
    }
    forms
}

/// Allow forms for the command starting at word `s`: words exactly as the shell passes them,
/// with a system-directory program path read as the program.
pub(crate) fn allow_forms(words: &[Word], s: usize) -> Vec<Vec<u32>> {
    let Some(cmd) = words.get(s) else {
        return Vec::new();
    };
    let args = words.get(s + 1..).unwrap_or(&[]);
    let form = |first: &str| {
        let len = first.len() + args.iter().map(|a| a.text.len() + 1).sum::<usize>();
        let mut u: Vec<u32> = Vec::with_capacity(len);
        u.extend(units(first));
        for a in args {
            u.push(SEP);
            u.extend(units(&a.text));
        }
        u
    };
    let name = system_program(&cmd.text);
    let mut forms = vec![form(name)];
    if name != cmd.text {
        forms.push(form(&cmd.text));
    }
    forms
}

/// The units before the first word separator.
pub(super) fn first_word(units: &[u32]) -> &[u32] {
    units.split(|&u| u == SEP).next().unwrap_or(&[])
}

impl CommandLine {
    /// Calls `f` with the first word of every form a deny pattern is matched against, nested
    /// command text included. Returns false when a pattern may match whatever its first word
    /// (a command name that is a glob, `/bin/r?`): the caller must then try every pattern.
    pub(crate) fn deny_heads(&self, f: &mut impl FnMut(&[u32])) -> bool {
        for sub in &self.subs {
            for form in sub.deny_forms() {
                if form.glob_cmd.is_some() {
                    return false;
                }
                f(first_word(&form.units));
                if let Some((_, rest)) = &form.norm {
                    f(first_word(rest));
                }
            }
            for n in &sub.nested {
                if !n.deny_heads(f) {
                    return false;
                }
            }
        }
        true
    }

    /// Calls `f` with the first word of every allow form of the subcommands a pattern must
    /// cover. Returns false when no subcommand needs a pattern (every pattern covers the line
    /// alike): the caller must then try every pattern.
    pub(crate) fn allow_heads(&self, f: &mut impl FnMut(&[u32])) -> bool {
        let line_opaque = !self.reasons.is_empty();
        let mut needs_pattern = false;
        for sub in &self.subs {
            if sub.noop && !(line_opaque || sub.is_opaque()) {
                continue;
            }
            needs_pattern = true;
            for form in sub.allow_forms() {
                f(first_word(form));
            }
        }
        needs_pattern
    }
}
