//! Lexer: turns command text into words, operators and redirections the way bash does, so the
//! matcher compares what the shell will run rather than how the text happens to be spelled.
//!
//! Attack: text that reads one way to a matcher and another to bash. Quotes and escapes are
//! removed (`r'm'`, `"rm"`, `\rm` and `$'\x72m'` all become `rm`, see [`quote`]) and brace
//! expansion is performed (`{rm,-rf,/}` is three words to bash, see [`brace`]). Whatever the
//! shell only knows at run time (`$VAR`, `$(...)`, backticks, globs) is flagged on the word so
//! callers can treat it as unknown, and command text inside `$(...)`, backticks and `<(...)`
//! ([`expand`]) and expanding here-documents ([`redirect`]) is parsed too, so deny rules see
//! commands hidden there.
//!
//! This file is the tokenizer core: operators, blanks, comments, and where words and
//! redirections start. [`word`] reads one word.

use std::cell::Cell;

use super::RedirectKind;

mod brace;
mod expand;
mod quote;
mod redirect;
mod word;

pub(crate) use word::Word;

use redirect::PendingHereDoc;

/// Deeper nesting is not parsed; the construct is reported as opaque instead. Bounds recursion
/// (and so the stack) on hostile input.
pub(crate) const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    AndIf,
    OrIf,
    Semi,
    Pipe,
    PipeAll,
    Amp,
    Newline,
    CaseEnd,
    LParen,
    RParen,
}

#[derive(Debug, Clone)]
pub(crate) struct RawRedirect<'s> {
    pub(crate) kind: RedirectKind,
    pub(crate) fd: Option<u32>,
    pub(crate) target: Option<Word<'s>>,
}

#[derive(Debug, Clone)]
pub(crate) enum Tok<'s> {
    Word(Word<'s>),
    Op(Op),
    Redir(RawRedirect<'s>),
}

#[derive(Debug)]
pub(crate) struct Lexer<'s, 'b> {
    src: &'s str,
    /// A byte offset into `src`. It stays on a character boundary: it moves by one only past
    /// ASCII characters, and past any other by its UTF-8 length ([`Lexer::bump`]). Every
    /// character bash treats specially is ASCII.
    pos: usize,
    depth: usize,
    budget: &'b Cell<usize>,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl<'s, 'b> Lexer<'s, 'b> {
    pub(crate) fn new(src: &'s str, depth: usize, budget: &'b Cell<usize>) -> Self {
        Lexer {
            src,
            pos: 0,
            depth,
            budget,
        }
    }

    fn char_at(&self, at: usize) -> Option<char> {
        match self.src.as_bytes().get(at) {
            Some(&b) if b.is_ascii() => Some(char::from(b)),
            Some(_) => self.src.get(at..).and_then(|rest| rest.chars().next()),
            None => None,
        }
    }

    fn peek(&self) -> Option<char> {
        self.char_at(self.pos)
    }

    /// The character `off` bytes ahead: callers look past ASCII characters only.
    fn peek_at(&self, off: usize) -> Option<char> {
        self.char_at(self.pos.saturating_add(off))
    }

    /// Steps past `c`, the character at the position.
    fn bump(&mut self, c: char) {
        self.pos += c.len_utf8();
    }

    /// Steps past the character at the position, if any.
    fn skip_char(&mut self) {
        if let Some(c) = self.peek() {
            self.bump(c);
        }
    }

    fn len(&self) -> usize {
        self.src.len()
    }

    fn slice(&self, start: usize, end: usize) -> &'s str {
        let end = end.min(self.src.len());
        self.src.get(start.min(end)..end).unwrap_or("")
    }

    /// Lexes a command sequence. With `stop_at_paren` it ends at the `)` closing a `$(` or `<(`
    /// and reports whether that `)` was found.
    pub(crate) fn lex_seq(&mut self, stop_at_paren: bool) -> (Vec<Tok<'s>>, bool) {
        // Room for a token per four characters: one allocation for most lines.
        let mut toks = Vec::with_capacity(self.len().saturating_sub(self.pos) / 4 + 1);
        let mut pending: Vec<PendingHereDoc> = Vec::new();
        let mut parens = 0usize;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while let Some(c) = self.peek()
                        && c != '\n'
                    {
                        self.bump(c);
                    }
                }
                '\n' => {
                    self.pos += 1;
                    toks.push(Tok::Op(Op::Newline));
                    self.read_heredocs(&mut toks, &mut pending);
                }
                ';' => {
                    let op = match self.peek_at(1) {
                        Some(';') => {
                            self.pos += if self.peek_at(2) == Some('&') { 3 } else { 2 };
                            Op::CaseEnd
                        }
                        Some('&') => {
                            self.pos += 2;
                            Op::CaseEnd
                        }
                        _ => {
                            self.pos += 1;
                            Op::Semi
                        }
                    };
                    toks.push(Tok::Op(op));
                }
                '&' => match self.peek_at(1) {
                    Some('&') => {
                        self.pos += 2;
                        toks.push(Tok::Op(Op::AndIf));
                    }
                    Some('>') => self.lex_redirect(None, &mut toks, &mut pending),
                    _ => {
                        self.pos += 1;
                        toks.push(Tok::Op(Op::Amp));
                    }
                },
                '|' => {
                    let op = match self.peek_at(1) {
                        Some('|') => Op::OrIf,
                        Some('&') => Op::PipeAll,
                        _ => Op::Pipe,
                    };
                    self.pos += if op == Op::Pipe { 1 } else { 2 };
                    toks.push(Tok::Op(op));
                }
                '(' => {
                    self.pos += 1;
                    parens += 1;
                    toks.push(Tok::Op(Op::LParen));
                }
                ')' => {
                    self.pos += 1;
                    if stop_at_paren && parens == 0 {
                        return (toks, true);
                    }
                    parens = parens.saturating_sub(1);
                    toks.push(Tok::Op(Op::RParen));
                }
                '<' | '>' if self.peek_at(1) != Some('(') => {
                    self.lex_redirect(None, &mut toks, &mut pending);
                }
                _ => {
                    // Most words are plain: no vector of brace-expanded words for them.
                    if let Some(w) = self.plain_word() {
                        match self.fd_before_redirect(&w) {
                            Some(fd) => self.lex_redirect(fd, &mut toks, &mut pending),
                            None => toks.push(Tok::Word(w)),
                        }
                        continue;
                    }
                    let before = self.pos;
                    let words = self.built_word();
                    if let [w] = words.as_slice()
                        && let Some(fd) = self.fd_before_redirect(w)
                    {
                        self.lex_redirect(fd, &mut toks, &mut pending);
                        continue;
                    }
                    if self.pos == before {
                        // Cannot happen for the characters routed here; never loop forever.
                        self.bump(c);
                    }
                    toks.extend(words.into_iter().map(Tok::Word));
                }
            }
        }
        (toks, false)
    }

    /// For a word such as `2` or `{fd}` right before `<` or `>`: the descriptor it names
    /// (`Some(None)` for a named one), since the word is part of the redirection.
    fn fd_before_redirect(&self, w: &Word<'_>) -> Option<Option<u32>> {
        (is_fd_word(w) && matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) != Some('('))
            .then(|| w.text.parse().ok())
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(c) if is_blank(c) => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }
}

/// The command lines inside the `$(...)`, `${...}` and backticks of `text`, read as bash reads
/// a double-quoted string: for text bash expands later (a subscript it evaluates), whatever
/// quotes kept it from being expanded here.
pub(crate) fn substitutions(
    text: &str,
    depth: usize,
    budget: &Cell<usize>,
) -> Vec<crate::CommandLine<'static>> {
    let mut lexer = Lexer::new(text, depth, budget);
    let mut b = word::Builder::default();
    lexer.dquote(&mut b, None);
    b.w.take_nested()
        .into_iter()
        .map(crate::CommandLine::into_owned)
        .collect()
}

fn is_fd_word(w: &Word<'_>) -> bool {
    if w.quoted || w.expands() || w.brace {
        return false;
    }
    let t = w.text.as_ref();
    let digits = !t.is_empty() && t.len() <= 9 && t.chars().all(|c| c.is_ascii_digit());
    let named = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()));
    digits || named
}
