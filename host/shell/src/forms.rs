//! Forms: how a subcommand reads to rule patterns, built on first use.
//!
//! A pattern is matched against words, never raw text, so quoting cannot make a command look
//! different to the matcher than to the shell. Each wrapper-stripped start of a subcommand gives
//! forms: for deny rules loosely (whitespace inside a word splits it, the command name is read
//! as its basename and as written, flags become a set), for allow rules strictly (the words
//! exactly as the shell passes them). The first word of each form is what the rule index
//! (`warden_policy`'s) looks up, so a rule whose pattern starts with another word is never tried.

use super::lex::Word;
use super::pattern::{SEP, Units, is_ifs, split_flags, units};
use super::wrappers::{program_name, system_program};
use super::{CommandLine, SubCommand};

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
    let (flags, idx) = split_flags(base, args.iter().map(|a| Some(a.text.as_ref())));
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

/// An allow form: the words of the command starting at some word, exactly as the shell passes
/// them, with the command word read as `first`. Read in place, never copied.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllowForm<'s> {
    first: &'s str,
    args: &'s [Word<'s>],
}

impl AllowForm<'_> {
    /// The command word as the form reads it.
    pub(crate) fn first(&self) -> &str {
        self.first
    }

    /// The position just after the command word.
    pub(crate) fn after_first(&self) -> (usize, usize) {
        (0, self.first.len())
    }
}

/// A position in an [`AllowForm`]: a word (0 is `first`) and a byte offset in it; at the end of a
/// word that is not the last, the unit there is the word separator.
impl Units for AllowForm<'_> {
    type Pos = (usize, usize);

    fn start(&self) -> (usize, usize) {
        (0, 0)
    }

    fn next(&self, (w, b): (usize, usize)) -> Option<(u32, (usize, usize))> {
        let text = if w == 0 {
            self.first
        } else {
            self.args.get(w - 1)?.text.as_ref()
        };
        match text.as_bytes().get(b) {
            Some(&ascii) if ascii.is_ascii() => Some((u32::from(ascii), (w, b + 1))),
            Some(_) => {
                let c = text.get(b..)?.chars().next()?;
                Some((u32::from(c), (w, b + c.len_utf8())))
            }
            None if w < self.args.len() => Some((SEP, (w + 1, 0))),
            None => None,
        }
    }
}

/// Calls `f` with the allow forms of the command starting at word `s` until it returns true: the
/// words as the shell passes them, with a system-directory program path read as the program
/// (and, when that differs, the path as written).
pub(crate) fn any_allow_form(
    words: &[Word],
    s: usize,
    f: &mut impl FnMut(AllowForm<'_>) -> bool,
) -> bool {
    let Some(cmd) = words.get(s) else {
        return false;
    };
    let args = words.get(s + 1..).unwrap_or(&[]);
    let name = system_program(&cmd.text);
    f(AllowForm { first: name, args })
        || (name != cmd.text
            && f(AllowForm {
                first: &cmd.text,
                args,
            }))
}

/// The units before the first word separator.
pub(super) fn first_word(units: &[u32]) -> &[u32] {
    units.split(|&u| u == SEP).next().unwrap_or(&[])
}

/// The first word of a form, as a rule index looks it up: the same word whichever variant
/// spells it, so a key made from one must equal a key made from the other.
#[derive(Debug, Clone, Copy)]
pub enum Head<'h> {
    /// The word as text.
    Text(&'h str),
    /// The word as pattern units: one `u32` per character (`u32::from(char)`), the units
    /// [`Pattern::deny_heads`](crate::Pattern::deny_heads) gives.
    Units(&'h [u32]),
}

/// The first loose piece of `text` (split at blanks and newlines), if it has one.
fn first_piece(text: &str) -> Option<&str> {
    if !text.bytes().any(|b| matches!(b, b' ' | b'\t' | b'\n')) {
        return (!text.is_empty()).then_some(text);
    }
    text.split(is_ifs).find(|p| !p.is_empty())
}

impl SubCommand<'_> {
    /// [`CommandLine::deny_heads`] for this subcommand alone, nested text excluded. The first word
    /// of a deny form is the first piece of its command word, so the forms are not built unless
    /// a command word has no piece (then the first word comes from the arguments).
    fn deny_heads(&self, f: &mut impl FnMut(Head<'_>)) -> bool {
        for &s in self.deny_starts.iter() {
            let Some(cmd) = self.words.get(s) else {
                continue;
            };
            if cmd.glob {
                return false;
            }
            let base = program_name(&cmd.text);
            let Some(head) = first_piece(base) else {
                return self.deny_heads_from_forms(f);
            };
            // The basename is a suffix of the word: the same length means the same text.
            if base.len() != cmd.text.len() {
                let Some(written) = first_piece(&cmd.text) else {
                    return self.deny_heads_from_forms(f);
                };
                f(Head::Text(written));
            }
            f(Head::Text(head));
        }
        true
    }

    fn deny_heads_from_forms(&self, f: &mut impl FnMut(Head<'_>)) -> bool {
        for form in self.deny_forms() {
            if form.glob_cmd.is_some() {
                return false;
            }
            f(Head::Units(first_word(&form.units)));
            if let Some((_, rest)) = &form.norm {
                f(Head::Units(first_word(rest)));
            }
        }
        true
    }
}

impl CommandLine<'_> {
    /// Calls `f` with the first word of every form a deny pattern is matched against, nested
    /// command text included. Returns false when a pattern may match whatever its first word
    /// (a command name that is a glob, `/bin/r?`): the caller must then try every pattern.
    pub fn deny_heads(&self, f: &mut impl FnMut(Head<'_>)) -> bool {
        for sub in &self.subs {
            if !sub.deny_heads(f) {
                return false;
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
    pub fn allow_heads(&self, f: &mut impl FnMut(Head<'_>)) -> bool {
        let line_opaque = !self.reasons.is_empty();
        let mut needs_pattern = false;
        for sub in &self.subs {
            if sub.noop && !(line_opaque || sub.is_opaque()) {
                continue;
            }
            needs_pattern = true;
            for &s in sub.allow_starts.iter() {
                // The first word of an allow form is its command word, whole.
                if let Some(cmd) = sub.words.get(s) {
                    let name = system_program(&cmd.text);
                    f(Head::Text(name));
                    if name != cmd.text {
                        f(Head::Text(&cmd.text));
                    }
                }
            }
        }
        needs_pattern
    }
}
