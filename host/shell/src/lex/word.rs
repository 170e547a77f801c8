//! One word: quote removal, the flags that say what bash would still do to it at run time, and
//! the `NAME=value`, glob and `~` readings that only unquoted characters get.
//!
//! Attack: a quoted character passing for an unquoted one, or the reverse. `"*"` is not a glob,
//! `'then'` is not a reserved word, `\X=1` is not an assignment; each character is kept with
//! whether it was literal until the word is complete, so none of these is misread.

use std::borrow::Cow;

use super::Lexer;
use super::brace::{Brace, brace_expand, find_brace};
use crate::CommandLine;

/// One shell word after quote removal, with what the shell would still do to it at run time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Word<'s> {
    /// Borrowed from the command line when the word is spelled as it reads.
    pub(crate) text: Cow<'s, str>,
    /// Some part was quoted or escaped (so it is never a reserved word).
    pub(crate) quoted: bool,
    /// Contains a parameter expansion (`$X`, `${X}`, `$1`).
    pub(crate) param: bool,
    /// Contains a command substitution (`$(...)`, backticks, `$((...))`).
    pub(crate) cmdsub: bool,
    /// Contains a process substitution (`<(...)`, `>(...)`).
    pub(crate) procsub: bool,
    /// Contains an unquoted glob character.
    pub(crate) glob: bool,
    /// Starts with an unquoted `~`.
    pub(crate) tilde: bool,
    /// Produced by brace expansion.
    pub(crate) brace: bool,
    /// Has the form `NAME=value`.
    pub(crate) assignment: bool,
    pub(crate) unterminated: bool,
    /// Command text inside the word and why it is opaque: rare, so kept out of line to keep
    /// words (moved through lexing and splitting) small.
    extra: Option<Box<Extra<'s>>>,
}

#[derive(Debug, Clone, Default)]
struct Extra<'s> {
    nested: Vec<CommandLine<'s>>,
    reasons: Vec<String>,
}

impl<'s> Word<'s> {
    /// A word with this text and nothing else to it (no quoting, expansion or assignment).
    pub(crate) fn bare(text: Cow<'s, str>) -> Word<'s> {
        Word {
            text,
            ..Word::default()
        }
    }

    fn extra(&mut self) -> &mut Extra<'s> {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Records why the word cannot be read statically.
    pub(crate) fn add_reason(&mut self, reason: &str) {
        self.extra().reasons.push(reason.to_owned());
    }

    /// Records command text parsed from inside the word.
    pub(crate) fn add_nested(&mut self, line: CommandLine<'s>) {
        self.extra().nested.push(line);
    }

    /// Why the word cannot be read statically.
    pub(crate) fn reasons(&self) -> &[String] {
        self.extra.as_ref().map_or(&[], |e| &e.reasons)
    }

    /// Takes the command text parsed from inside the word.
    pub(crate) fn take_nested(&mut self) -> Vec<CommandLine<'s>> {
        self.extra
            .as_mut()
            .map(|e| std::mem::take(&mut e.nested))
            .unwrap_or_default()
    }
}

impl Word<'_> {
    /// The value is only known at run time.
    pub(crate) fn expands(&self) -> bool {
        self.param || self.cmdsub || self.procsub
    }

    /// Takes in what `other` (part of this word, or text read apart from it) expands and why it
    /// is opaque. Its nested command lines are copied out of the text they borrow.
    pub(super) fn absorb(&mut self, other: Word<'_>) {
        self.param |= other.param;
        self.cmdsub |= other.cmdsub;
        self.procsub |= other.procsub;
        self.unterminated |= other.unterminated;
        if let Some(e) = other.extra {
            let mine = self.extra();
            for n in e.nested {
                mine.nested.push(n.into_owned());
            }
            mine.reasons.extend(e.reasons);
        }
    }

    /// The word with its text copied, so it outlives the text it was read from.
    pub(crate) fn into_owned(self) -> Word<'static> {
        Word {
            text: Cow::Owned(self.text.into_owned()),
            quoted: self.quoted,
            param: self.param,
            cmdsub: self.cmdsub,
            procsub: self.procsub,
            glob: self.glob,
            tilde: self.tilde,
            brace: self.brace,
            assignment: self.assignment,
            unterminated: self.unterminated,
            extra: self.extra.map(|e| {
                Box::new(Extra {
                    nested: e.nested.into_iter().map(CommandLine::into_owned).collect(),
                    reasons: e.reasons,
                })
            }),
        }
    }
}

/// A word being built: each character remembers whether it was literal (quoted, escaped or
/// produced by an expansion), because only unquoted braces and globs are special.
#[derive(Debug, Default)]
pub(super) struct Builder<'s> {
    pub(super) chars: Vec<(char, bool)>,
    pub(super) w: Word<'s>,
}

impl Builder<'_> {
    pub(super) fn raw(&mut self, c: char) {
        self.chars.push((c, false));
    }
    pub(super) fn lit(&mut self, c: char) {
        self.chars.push((c, true));
    }
}

impl<'s> Lexer<'s, '_> {
    /// Lexes one word; brace expansion may turn it into several.
    pub(crate) fn lex_word(&mut self) -> Vec<Word<'s>> {
        match self.plain_word() {
            Some(w) => vec![w],
            None => self.built_word(),
        }
    }

    /// [`Lexer::lex_word`] character by character, for any word.
    pub(crate) fn built_word(&mut self) -> Vec<Word<'s>> {
        let mut b = Builder::default();
        while let Some(c) = self.peek() {
            match c {
                c if is_word_end(c) => break,
                '<' | '>' => {
                    if b.chars.is_empty() && !b.w.quoted && self.peek_at(1) == Some('(') {
                        self.substitution(&mut b, true);
                    } else {
                        break;
                    }
                }
                '\\' => {
                    let next = self.peek_at(1);
                    match next {
                        Some('\n') => {}
                        Some(n) => {
                            b.lit(n);
                            b.w.quoted = true;
                        }
                        None => b.lit('\\'),
                    }
                    self.pos += 1 + next.map_or(1, char::len_utf8);
                }
                '\'' => {
                    self.pos += 1;
                    b.w.quoted = true;
                    loop {
                        match self.peek() {
                            None => {
                                b.w.unterminated = true;
                                break;
                            }
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(ch) => {
                                b.lit(ch);
                                self.bump(ch);
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    self.dquote(&mut b, Some('"'));
                }
                '$' => self.dollar(&mut b, false),
                '`' => self.backtick(&mut b),
                _ => {
                    b.raw(c);
                    self.bump(c);
                }
            }
        }
        self.pos = self.pos.min(self.len());
        self.finish(b)
    }

    /// The common case, without building the word character by character: a word of only
    /// characters that mean nothing special to bash (no quote, escape, expansion, glob, brace or
    /// `~`), so the word is its text as written. `None` (nothing consumed) otherwise.
    pub(super) fn plain_word(&mut self) -> Option<Word<'s>> {
        // Special characters are ASCII, so a byte that is not one never starts one.
        let src = self.src;
        let rest = src.get(self.pos..).unwrap_or("");
        let len = rest
            .bytes()
            .take_while(|&b| !SPECIAL.get(usize::from(b)).copied().unwrap_or(false))
            .count();
        let ends_word = match rest.as_bytes().get(len) {
            None => true,
            Some(&b) => is_word_end(char::from(b)) || matches!(b, b'<' | b'>'),
        };
        if len == 0 || !ends_word {
            return None;
        }
        let text = rest.get(..len)?;
        self.pos += len;
        Some(Word {
            // Every character is unquoted here, so `NAME=value` needs a `=` somewhere.
            assignment: text.as_bytes().contains(&b'=')
                && is_assignment(text.chars().map(|c| (c, false))),
            text: Cow::Borrowed(text),
            ..Word::default()
        })
    }

    pub(super) fn finish(&mut self, b: Builder<'s>) -> Vec<Word<'s>> {
        let Builder { chars, w } = b;
        if !chars.iter().any(|&(c, lit)| c == '{' && !lit)
            || matches!(find_brace(&chars), Brace::None)
        {
            return vec![make_word(&chars, w)];
        }
        let mut out = Vec::new();
        let mut budget = self.budget.get();
        if brace_expand(&chars, 0, &mut out, &mut budget) {
            self.budget.set(budget);
            // An empty result of an unquoted word is no argument at all
            // (`{,x}` is just `x`); a quoted part keeps it (`''{,x}`).
            let quoted = w.quoted;
            out.iter()
                .filter(|cs| quoted || !cs.is_empty())
                .map(|cs| {
                    let mut word = make_word(cs, w.clone());
                    word.brace = true;
                    word
                })
                .collect()
        } else {
            let mut word = make_word(&chars, w);
            word.brace = true;
            word.add_reason("brace expansion too large to read");
            vec![word]
        }
    }
}

fn make_word<'s>(chars: &[(char, bool)], mut w: Word<'s>) -> Word<'s> {
    w.text = Cow::Owned(chars.iter().map(|&(c, _)| c).collect());
    w.glob = has_glob(chars);
    w.tilde = matches!(chars.first(), Some(('~', false)));
    w.assignment = is_assignment(chars.iter().copied());
    w
}

fn has_glob(chars: &[(char, bool)]) -> bool {
    let mut open_bracket = false;
    for &(c, lit) in chars {
        if lit {
            continue;
        }
        match c {
            '*' | '?' => return true,
            '[' => open_bracket = true,
            ']' if open_bracket => return true,
            _ => {}
        }
    }
    false
}

fn is_assignment(chars: impl Iterator<Item = (char, bool)>) -> bool {
    let mut it = chars.peekable();
    match it.next() {
        Some((c, false)) if c == '_' || c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    while let Some(&(c, lit)) = it.peek() {
        if lit || !(c == '_' || c.is_ascii_alphanumeric()) {
            break;
        }
        it.next();
    }
    if it.peek().is_some_and(|&(c, lit)| c == '[' && !lit) {
        for (c, _) in it.by_ref() {
            if c == ']' {
                break;
            }
        }
    }
    if it.peek().is_some_and(|&(c, lit)| c == '+' && !lit) {
        it.next();
    }
    matches!(it.next(), Some(('=', false)))
}

/// Characters that end a word wherever they stand.
const fn is_word_end(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')')
}

/// Characters that end a word or change how it reads: quotes, escapes, expansions,
/// redirections, globs, braces and `~`. A word without them is its text as written.
/// [`is_special`] by byte: only ASCII bytes are special.
static SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        table[b] = is_special(b as u8 as char);
        b += 1;
    }
    table
};

const fn is_special(c: char) -> bool {
    is_word_end(c)
        || matches!(
            c,
            '<' | '>' | '\\' | '\'' | '"' | '$' | '`' | '{' | '*' | '?' | '[' | '~'
        )
}
