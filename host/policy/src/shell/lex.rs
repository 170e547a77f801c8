//! Lexer: turns command text into words, operators and redirections the way bash does, so the
//! matcher compares what the shell will run rather than how the text happens to be spelled.
//!
//! Quotes and escapes are removed (`r'm'`, `"rm"`, `\rm` and `$'\x72m'` all become `rm`) and
//! brace expansion is performed (`{rm,-rf,/}` is three words to bash). Whatever the shell only
//! knows at run time (`$VAR`, `$(...)`, backticks, globs) is flagged on the word so callers can
//! treat it as unknown. Command text inside `$(...)`, backticks, `<(...)` and expanding
//! here-documents is parsed too, so deny rules see commands hidden there.

use std::cell::Cell;

use super::{CommandLine, RedirectKind, split};

/// Deeper nesting is not parsed; the construct is reported as opaque instead. Bounds recursion
/// (and so the stack) on hostile input.
pub(crate) const MAX_DEPTH: usize = 16;
const BRACE_MAX_WORDS: usize = 256;
const BRACE_MAX_DEPTH: usize = 12;

/// One shell word after quote removal, with what the shell would still do to it at run time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    pub(crate) text: String,
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
    pub(crate) nested: Vec<CommandLine>,
    pub(crate) reasons: Vec<String>,
}

impl Word {
    /// The value is only known at run time.
    pub(crate) fn expands(&self) -> bool {
        self.param || self.cmdsub || self.procsub
    }

    fn absorb(&mut self, other: Word) {
        self.param |= other.param;
        self.cmdsub |= other.cmdsub;
        self.procsub |= other.procsub;
        self.unterminated |= other.unterminated;
        self.nested.extend(other.nested);
        self.reasons.extend(other.reasons);
    }
}

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
pub(crate) struct RawRedirect {
    pub(crate) kind: RedirectKind,
    pub(crate) fd: Option<u32>,
    pub(crate) target: Option<Word>,
}

#[derive(Debug, Clone)]
pub(crate) enum Tok {
    Word(Word),
    Op(Op),
    Redir(RawRedirect),
}

/// A word being built: each character remembers whether it was literal (quoted, escaped or
/// produced by an expansion), because only unquoted braces and globs are special.
#[derive(Debug, Default)]
struct Builder {
    chars: Vec<(char, bool)>,
    w: Word,
}

impl Builder {
    fn raw(&mut self, c: char) {
        self.chars.push((c, false));
    }
    fn lit(&mut self, c: char) {
        self.chars.push((c, true));
    }
}

struct PendingHereDoc {
    tok: usize,
    delim: Vec<char>,
    strip_tabs: bool,
    expands: bool,
}

#[derive(Debug)]
pub(crate) struct Lexer<'b> {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    budget: &'b Cell<usize>,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl<'b> Lexer<'b> {
    pub(crate) fn new(src: &str, depth: usize, budget: &'b Cell<usize>) -> Self {
        Lexer {
            chars: src.chars().collect(),
            pos: 0,
            depth,
            budget,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos.saturating_add(off)).copied()
    }

    fn slice(&self, start: usize, end: usize) -> &[char] {
        let end = end.min(self.chars.len());
        self.chars.get(start.min(end)..end).unwrap_or(&[])
    }

    /// Lexes a command sequence. With `stop_at_paren` it ends at the `)` closing a `$(` or `<(`
    /// and reports whether that `)` was found.
    pub(crate) fn lex_seq(&mut self, stop_at_paren: bool) -> (Vec<Tok>, bool) {
        let mut toks = Vec::new();
        let mut pending: Vec<PendingHereDoc> = Vec::new();
        let mut parens = 0usize;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
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
                    let before = self.pos;
                    let words = self.lex_word();
                    if let [w] = words.as_slice()
                        && is_fd_word(w)
                        && matches!(self.peek(), Some('<' | '>'))
                        && self.peek_at(1) != Some('(')
                    {
                        let fd = w.text.parse().ok();
                        self.lex_redirect(fd, &mut toks, &mut pending);
                        continue;
                    }
                    if self.pos == before {
                        // Cannot happen for the characters routed here; never loop forever.
                        self.pos += 1;
                    }
                    toks.extend(words.into_iter().map(Tok::Word));
                }
            }
        }
        (toks, false)
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

    fn lex_redirect(
        &mut self,
        fd: Option<u32>,
        toks: &mut Vec<Tok>,
        pending: &mut Vec<PendingHereDoc>,
    ) {
        let (kind, len, strip_tabs) = match (self.peek(), self.peek_at(1), self.peek_at(2)) {
            (Some('&'), _, Some('>')) => (RedirectKind::AppendOutputAndError, 3, false),
            (Some('&'), _, _) => (RedirectKind::OutputAndError, 2, false),
            (Some('<'), Some('<'), Some('<')) => (RedirectKind::HereString, 3, false),
            (Some('<'), Some('<'), Some('-')) => (RedirectKind::HereDoc { expands: true }, 3, true),
            (Some('<'), Some('<'), _) => (RedirectKind::HereDoc { expands: true }, 2, false),
            (Some('<'), Some('>'), _) => (RedirectKind::ReadWrite, 2, false),
            (Some('<'), Some('&'), _) => (RedirectKind::DupInput, 2, false),
            (Some('<'), _, _) => (RedirectKind::Input, 1, false),
            (Some('>'), Some('>'), _) => (RedirectKind::Append, 2, false),
            (Some('>'), Some('|'), _) => (RedirectKind::Clobber, 2, false),
            (Some('>'), Some('&'), _) => (RedirectKind::DupOutput, 2, false),
            _ => (RedirectKind::Output, 1, false),
        };
        self.pos += len;
        self.skip_blanks();
        let target = match self.peek() {
            None | Some('\n' | ';' | '&' | '|' | '(' | ')') => None,
            Some('<' | '>') if self.peek_at(1) != Some('(') => None,
            Some(_) => {
                let mut words = self.lex_word().into_iter();
                let first = words.next();
                match (first, words.next()) {
                    (Some(mut w), Some(_)) => {
                        w.reasons
                            .push("ambiguous redirect (brace expansion)".to_string());
                        Some(w)
                    }
                    (first, None) => first,
                    (None, Some(w)) => Some(w),
                }
            }
        };
        let kind = match (kind, &target) {
            (RedirectKind::HereDoc { .. }, Some(t)) => {
                let expands = !t.quoted;
                pending.push(PendingHereDoc {
                    tok: toks.len(),
                    delim: t.text.chars().collect(),
                    strip_tabs,
                    expands,
                });
                RedirectKind::HereDoc { expands }
            }
            (k, _) => k,
        };
        toks.push(Tok::Redir(RawRedirect { kind, fd, target }));
    }

    /// Consumes here-document bodies after a newline so their lines are never read as commands.
    fn read_heredocs(&mut self, toks: &mut [Tok], pending: &mut Vec<PendingHereDoc>) {
        for doc in pending.drain(..) {
            let mut body: Vec<char> = Vec::new();
            while self.pos < self.chars.len() {
                let start = self.pos;
                let mut end = start;
                while self.chars.get(end).is_some_and(|&c| c != '\n') {
                    end += 1;
                }
                let line = self.slice(start, end).to_vec();
                self.pos = if end < self.chars.len() { end + 1 } else { end };
                let cmp: &[char] = if doc.strip_tabs {
                    let tabs = line.iter().take_while(|&&c| c == '\t').count();
                    line.get(tabs..).unwrap_or(&[])
                } else {
                    &line
                };
                if cmp == doc.delim.as_slice() {
                    break;
                }
                body.extend(line);
                body.push('\n');
            }
            if !doc.expands || body.is_empty() {
                continue;
            }
            let text: String = body.into_iter().collect();
            let mut sub = Lexer::new(&text, self.depth, self.budget);
            let mut b = Builder::default();
            sub.dquote(&mut b, None);
            if let Some(Tok::Redir(RawRedirect {
                target: Some(t), ..
            })) = toks.get_mut(doc.tok)
            {
                t.absorb(b.w);
            }
        }
    }

    /// Lexes one word; brace expansion may turn it into several.
    pub(crate) fn lex_word(&mut self) -> Vec<Word> {
        let mut b = Builder::default();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' => {
                    if b.chars.is_empty() && !b.w.quoted && self.peek_at(1) == Some('(') {
                        self.substitution(&mut b, true);
                    } else {
                        break;
                    }
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(n) => {
                            b.lit(n);
                            b.w.quoted = true;
                        }
                        None => b.lit('\\'),
                    }
                    self.pos += 2;
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
                                self.pos += 1;
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
                    self.pos += 1;
                }
            }
        }
        self.pos = self.pos.min(self.chars.len());
        self.finish(b)
    }

    /// Double-quoted text up to `terminator`, or to the end of input for here-document bodies.
    fn dquote(&mut self, b: &mut Builder, terminator: Option<char>) {
        b.w.quoted = true;
        loop {
            match self.peek() {
                None => {
                    if terminator.is_some() {
                        b.w.unterminated = true;
                    }
                    return;
                }
                Some(c) if Some(c) == terminator => {
                    self.pos += 1;
                    return;
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(n @ ('"' | '\\' | '$' | '`')) => {
                        b.lit(n);
                        self.pos += 2;
                    }
                    _ => {
                        b.lit('\\');
                        self.pos += 1;
                    }
                },
                Some('$') => self.dollar(b, true),
                Some('`') => self.backtick(b),
                Some(c) => {
                    b.lit(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn push_raw_literal(&self, b: &mut Builder, start: usize) {
        let text: Vec<char> = self.slice(start, self.pos).to_vec();
        for c in text {
            b.lit(c);
        }
    }

    fn dollar(&mut self, b: &mut Builder, in_dquote: bool) {
        let start = self.pos;
        match self.peek_at(1) {
            Some('\'') if !in_dquote => {
                self.pos += 2;
                self.ansi_c(b);
            }
            Some('"') if !in_dquote => {
                self.pos += 2;
                self.dquote(b, Some('"'));
            }
            Some('(') => self.substitution(b, false),
            Some('{') => {
                self.pos += 2;
                self.param_braced(b);
                b.w.param = true;
                self.push_raw_literal(b, start);
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.pos += 1;
                }
                b.w.param = true;
                self.push_raw_literal(b, start);
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 2;
                b.w.param = true;
                self.push_raw_literal(b, start);
            }
            _ => {
                self.pos += 1;
                if in_dquote { b.lit('$') } else { b.raw('$') }
            }
        }
    }

    /// `$(...)`, `$((...))`, `<(...)` or `>(...)`; the position is at the `$`, `<` or `>`.
    fn substitution(&mut self, b: &mut Builder, process: bool) {
        let start = self.pos;
        self.pos += 2;
        if self.depth >= MAX_DEPTH {
            if !self.skip_to_close_paren() {
                b.w.unterminated = true;
            }
            b.w.reasons.push("nesting too deep to read".to_string());
        } else {
            self.depth += 1;
            let (toks, closed) = self.lex_seq(true);
            self.depth -= 1;
            if !closed {
                b.w.unterminated = true;
            }
            b.w.nested
                .push(split::build(toks, self.depth + 1, self.budget));
        }
        if process {
            b.w.procsub = true;
        } else {
            b.w.cmdsub = true;
        }
        self.push_raw_literal(b, start);
    }

    /// Finds the end of a `$(` without parsing it, when nesting is already too deep.
    fn skip_to_close_paren(&mut self) -> bool {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    while let Some(c) = self.peek() {
                        self.pos += if c == '\\' { 2 } else { 1 };
                        if c == '"' {
                            break;
                        }
                    }
                }
                '(' => depth += 1,
                ')' if depth == 0 => return true,
                ')' => depth -= 1,
                _ => {}
            }
        }
        self.pos = self.pos.min(self.chars.len());
        false
    }

    /// The inside of `${...}`; the position is just after `${`. Defaults such as
    /// `${X:-$(cmd)}` can hold command substitutions, so those are lexed too.
    fn param_braced(&mut self, b: &mut Builder) {
        let deep = self.depth >= MAX_DEPTH;
        if deep {
            b.w.reasons.push("nesting too deep to read".to_string());
        }
        self.depth += 1;
        loop {
            match self.peek() {
                None => {
                    b.w.unterminated = true;
                    break;
                }
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => self.pos += 2,
                Some('\'') => {
                    self.pos += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                Some('"') if !deep => {
                    self.pos += 1;
                    let mut inner = Builder::default();
                    self.dquote(&mut inner, Some('"'));
                    b.w.absorb(inner.w);
                }
                Some('$') if !deep => {
                    let mut inner = Builder::default();
                    self.dollar(&mut inner, true);
                    b.w.absorb(inner.w);
                }
                Some('`') if !deep => {
                    let mut inner = Builder::default();
                    self.backtick(&mut inner);
                    b.w.absorb(inner.w);
                }
                Some(_) => self.pos += 1,
            }
        }
        self.depth -= 1;
        self.pos = self.pos.min(self.chars.len());
    }

    fn backtick(&mut self, b: &mut Builder) {
        let start = self.pos;
        self.pos += 1;
        let mut inner = String::new();
        let mut closed = false;
        while let Some(c) = self.peek() {
            match c {
                '`' => {
                    self.pos += 1;
                    closed = true;
                    break;
                }
                '\\' => match self.peek_at(1) {
                    Some(n @ ('`' | '\\' | '$')) => {
                        inner.push(n);
                        self.pos += 2;
                    }
                    _ => {
                        inner.push('\\');
                        self.pos += 1;
                    }
                },
                _ => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        if !closed {
            b.w.unterminated = true;
        }
        b.w.cmdsub = true;
        if self.depth >= MAX_DEPTH {
            b.w.reasons.push("nesting too deep to read".to_string());
        } else {
            b.w.nested
                .push(CommandLine::parse_at(&inner, self.depth + 1, self.budget));
        }
        self.push_raw_literal(b, start);
    }

    /// `$'...'`, with the C escapes bash decodes (`$'\x72\x6d'` is `rm`). The position is just
    /// after the opening quote.
    fn ansi_c(&mut self, b: &mut Builder) {
        b.w.quoted = true;
        // Bash cuts the string at a NUL byte.
        let mut cut = false;
        loop {
            match self.peek() {
                None => {
                    b.w.unterminated = true;
                    return;
                }
                Some('\'') => {
                    self.pos += 1;
                    return;
                }
                Some('\\') => {
                    self.pos += 1;
                    for c in self.ansi_escape() {
                        cut |= c == '\0';
                        if !cut {
                            b.lit(c);
                        }
                    }
                }
                Some(c) => {
                    self.pos += 1;
                    if !cut {
                        b.lit(c);
                    }
                }
            }
        }
    }

    fn read_digits(&mut self, radix: u32, max: usize) -> Option<u32> {
        let mut value: Option<u32> = None;
        for _ in 0..max {
            let Some(d) = self.peek().and_then(|c| c.to_digit(radix)) else {
                break;
            };
            value = Some(value.unwrap_or(0).saturating_mul(radix).saturating_add(d));
            self.pos += 1;
        }
        value
    }

    fn ansi_escape(&mut self) -> Vec<char> {
        let Some(c) = self.peek() else {
            return vec!['\\'];
        };
        self.pos += 1;
        let simple = match c {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(c),
            _ => None,
        };
        if let Some(s) = simple {
            return vec![s];
        }
        let code = match c {
            '0'..='7' => {
                self.pos -= 1;
                self.read_digits(8, 3).map(|v| v & 0xff)
            }
            'x' => self.read_digits(16, 2),
            'u' => self.read_digits(16, 4),
            'U' => self.read_digits(16, 8),
            'c' => match self.peek() {
                Some(n) => {
                    self.pos += 1;
                    Some(u32::from(n) & 0x1f)
                }
                None => None,
            },
            _ => return vec!['\\', c],
        };
        match code {
            Some(v) => vec![char::from_u32(v).unwrap_or('\u{fffd}')],
            None => vec!['\\', c],
        }
    }

    fn finish(&mut self, b: Builder) -> Vec<Word> {
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
            out.iter()
                .map(|cs| {
                    let mut word = make_word(cs, w.clone());
                    word.brace = true;
                    word
                })
                .collect()
        } else {
            let mut word = make_word(&chars, w);
            word.brace = true;
            word.reasons
                .push("brace expansion too large to read".to_string());
            vec![word]
        }
    }
}

fn is_fd_word(w: &Word) -> bool {
    if w.quoted || w.expands() || w.brace {
        return false;
    }
    let t = w.text.as_str();
    let digits = !t.is_empty() && t.len() <= 9 && t.chars().all(|c| c.is_ascii_digit());
    let named = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()));
    digits || named
}

fn make_word(chars: &[(char, bool)], mut w: Word) -> Word {
    w.text = chars.iter().map(|&(c, _)| c).collect();
    w.glob = has_glob(chars);
    w.tilde = matches!(chars.first(), Some(('~', false)));
    w.assignment = is_assignment(chars);
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

fn is_assignment(chars: &[(char, bool)]) -> bool {
    let mut it = chars.iter().peekable();
    match it.next() {
        Some(&(c, false)) if c == '_' || c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    while let Some(&&(c, lit)) = it.peek() {
        if lit || !(c == '_' || c.is_ascii_alphanumeric()) {
            break;
        }
        it.next();
    }
    if it.peek().is_some_and(|&&(c, lit)| c == '[' && !lit) {
        for &(c, _) in it.by_ref() {
            if c == ']' {
                break;
            }
        }
    }
    if it.peek().is_some_and(|&&(c, lit)| c == '+' && !lit) {
        it.next();
    }
    matches!(it.next(), Some(('=', false)))
}

type Chars = Vec<(char, bool)>;

/// What the first expandable brace of a word turns into.
enum Brace {
    None,
    TooLarge,
    Expand {
        open: usize,
        close: usize,
        alts: Vec<Chars>,
    },
}

/// Bash brace expansion. Returns false when the result would be too large, in which case the
/// caller keeps the word unexpanded and reports it as opaque.
fn brace_expand(
    word: &[(char, bool)],
    depth: usize,
    out: &mut Vec<Chars>,
    budget: &mut usize,
) -> bool {
    if depth > BRACE_MAX_DEPTH {
        return false;
    }
    match find_brace(word) {
        Brace::None => {
            if out.len() >= BRACE_MAX_WORDS || *budget < word.len() {
                return false;
            }
            *budget -= word.len();
            out.push(word.to_vec());
            true
        }
        Brace::TooLarge => false,
        Brace::Expand { open, close, alts } => {
            let prefix = word.get(..open).unwrap_or(&[]);
            let suffix = word.get(close + 1..).unwrap_or(&[]);
            for alt in alts {
                let mut next = Vec::with_capacity(prefix.len() + alt.len() + suffix.len());
                next.extend_from_slice(prefix);
                next.extend(alt);
                next.extend_from_slice(suffix);
                if !brace_expand(&next, depth + 1, out, budget) {
                    return false;
                }
            }
            true
        }
    }
}

/// Finds the leftmost unquoted `{...}` that bash would expand: one with a top-level comma, or a
/// sequence `{a..b[..step]}`. One pass with a stack, so hostile input stays linear.
fn find_brace(word: &[(char, bool)]) -> Brace {
    struct Frame {
        open: usize,
        commas: Vec<usize>,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut best: Option<(usize, usize, Vec<usize>)> = None;
    for (i, &(c, lit)) in word.iter().enumerate() {
        if lit {
            continue;
        }
        match c {
            '{' => stack.push(Frame {
                open: i,
                commas: Vec::new(),
            }),
            ',' => {
                if let Some(top) = stack.last_mut() {
                    top.commas.push(i);
                }
            }
            '}' => {
                let Some(frame) = stack.pop() else { continue };
                let better = best.as_ref().is_none_or(|(o, _, _)| frame.open < *o);
                if !better {
                    continue;
                }
                if !frame.commas.is_empty() {
                    best = Some((frame.open, i, frame.commas));
                } else {
                    let inner = word.get(frame.open + 1..i).unwrap_or(&[]);
                    match sequence(inner) {
                        Seq::Not => {}
                        Seq::TooLarge => return Brace::TooLarge,
                        Seq::Items(items) => {
                            return Brace::Expand {
                                open: frame.open,
                                close: i,
                                alts: items,
                            };
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let Some((open, close, commas)) = best else {
        return Brace::None;
    };
    let mut alts = Vec::with_capacity(commas.len() + 1);
    let mut from = open + 1;
    for c in commas.into_iter().chain(std::iter::once(close)) {
        alts.push(word.get(from..c).unwrap_or(&[]).to_vec());
        from = c + 1;
    }
    Brace::Expand { open, close, alts }
}

enum Seq {
    Not,
    TooLarge,
    Items(Vec<Chars>),
}

fn sequence(inner: &[(char, bool)]) -> Seq {
    if inner.len() > 64 || inner.iter().any(|&(_, lit)| lit) {
        return Seq::Not;
    }
    let text: String = inner.iter().map(|&(c, _)| c).collect();
    let parts: Vec<&str> = text.split("..").collect();
    let (a, b, step) = match parts.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(*s)),
        _ => return Seq::Not,
    };
    let step = match step.map(str::parse::<i64>) {
        None => 1,
        Some(Ok(s)) => s.saturating_abs().max(1),
        Some(Err(_)) => return Seq::Not,
    };
    let chars = |s: &str| {
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        }
    };
    let (start, end, width, alpha) = match (a.parse::<i64>(), b.parse::<i64>(), chars(a), chars(b))
    {
        (Ok(x), Ok(y), _, _) if a.len() <= 18 && b.len() <= 18 => {
            let padded = |s: &str| {
                s.trim_start_matches('-').starts_with('0') && s.trim_start_matches('-').len() > 1
            };
            let width = if padded(a) || padded(b) {
                a.len().max(b.len())
            } else {
                0
            };
            (x, y, width, false)
        }
        (_, _, Some(x), Some(y)) => (i64::from(u32::from(x)), i64::from(u32::from(y)), 0, true),
        _ => return Seq::Not,
    };
    let count = start.abs_diff(end) / step.unsigned_abs() + 1;
    if count > BRACE_MAX_WORDS as u64 {
        return Seq::TooLarge;
    }
    let mut items = Vec::new();
    let mut v = start;
    for _ in 0..count {
        let s = if alpha {
            u32::try_from(v)
                .ok()
                .and_then(char::from_u32)
                .map(String::from)
                .unwrap_or_default()
        } else if v < 0 {
            format!("-{:0>w$}", v.unsigned_abs(), w = width.saturating_sub(1))
        } else {
            format!("{v:0>width$}")
        };
        items.push(s.chars().map(|c| (c, true)).collect());
        v = if start <= end {
            v.saturating_add(step)
        } else {
            v.saturating_sub(step)
        };
    }
    Seq::Items(items)
}
