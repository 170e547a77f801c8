//! Expansions and substitutions: `$X`, `${...}`, `$(...)`, `$((...))`, backticks, `<(...)`.
//!
//! Attack: a command hidden inside text the shell runs before the visible command
//! (`echo $(rm -rf /)`, `` ls `curl x | sh` ``, `${X:-$(rm -rf /)}`). The hidden text is parsed
//! as a command line of its own, so deny rules and circuit breakers see it, and the word is
//! flagged as only known at run time. Nesting deeper than [`MAX_DEPTH`] is not parsed but
//! reported as opaque, so hostile input cannot exhaust the stack.

use super::word::Builder;
use super::{Lexer, MAX_DEPTH};
use crate::evaluated::{braced_inert, expr_inert};
use crate::unread::EVALUATED;
use crate::{CommandLine, split};

impl<'s> Lexer<'s, '_> {
    fn push_raw_literal(&self, b: &mut Builder<'s>, start: usize) {
        for c in self.slice(start, self.pos).chars() {
            b.lit(c);
        }
    }

    pub(super) fn dollar(&mut self, b: &mut Builder<'s>, in_dquote: bool) {
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
                // `${a[i]}` and `${x:off:len}` evaluate their subscript and offsets.
                let raw = self.slice(start, self.pos);
                let inner = raw.get(2..).unwrap_or("");
                if !braced_inert(inner.strip_suffix('}').unwrap_or(inner)) {
                    b.w.add_reason(EVALUATED);
                }
                self.push_raw_literal(b, start);
            }
            Some('[') => {
                // `$[expr]`, bash's old arithmetic expansion.
                self.pos += 2;
                let inner_start = self.pos;
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    self.bump(c);
                    match c {
                        '[' => depth += 1,
                        ']' if depth == 0 => break,
                        ']' => depth -= 1,
                        _ => {}
                    }
                }
                let raw = self.slice(inner_start, self.pos);
                let inner = raw.strip_suffix(']').unwrap_or(raw);
                b.w.param = true;
                if !expr_inert(inner) {
                    b.w.add_reason(EVALUATED);
                }
                if self.depth < MAX_DEPTH {
                    for n in super::substitutions(inner, self.depth + 1, self.budget) {
                        b.w.add_nested(n);
                    }
                }
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
    pub(super) fn substitution(&mut self, b: &mut Builder<'s>, process: bool) {
        let start = self.pos;
        self.pos += 2;
        if self.depth >= MAX_DEPTH {
            if !self.skip_to_close_paren() {
                b.w.unterminated = true;
            }
            b.w.add_reason("nesting too deep to read");
        } else {
            self.depth += 1;
            let (toks, closed) = self.lex_seq(true);
            self.depth -= 1;
            if !closed {
                b.w.unterminated = true;
            }
            b.w.add_nested(split::build(toks, self.depth + 1, self.budget));
        }
        if process {
            b.w.procsub = true;
        } else {
            b.w.cmdsub = true;
            // `$((x))` evaluates the value of `x`, and any `$(...)` in it, as arithmetic.
            let raw = self.slice(start, self.pos);
            if let Some(inner) = raw.strip_prefix("$((")
                && !expr_inert(inner.strip_suffix("))").unwrap_or(inner))
            {
                b.w.add_reason(EVALUATED);
            }
        }
        self.push_raw_literal(b, start);
    }

    /// Finds the end of a `$(` without parsing it, when nesting is already too deep.
    fn skip_to_close_paren(&mut self) -> bool {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            self.bump(c);
            match c {
                '\\' => self.skip_char(),
                '\'' => {
                    self.skip_to('\'');
                    self.pos += 1;
                }
                '"' => {
                    while let Some(c) = self.peek() {
                        self.bump(c);
                        if c == '\\' {
                            self.skip_char();
                        }
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
        self.pos = self.pos.min(self.len());
        false
    }

    /// Steps to the next `stop` (an ASCII character), or to the end.
    fn skip_to(&mut self, stop: char) {
        while let Some(c) = self.peek()
            && c != stop
        {
            self.bump(c);
        }
    }

    /// The inside of `${...}`; the position is just after `${`. Defaults such as
    /// `${X:-$(cmd)}` can hold command substitutions, so those are lexed too.
    fn param_braced(&mut self, b: &mut Builder<'s>) {
        let deep = self.depth >= MAX_DEPTH;
        if deep {
            b.w.add_reason("nesting too deep to read");
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
                Some('\\') => {
                    self.pos += 1;
                    self.skip_char();
                }
                Some('\'') => {
                    self.pos += 1;
                    self.skip_to('\'');
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
                Some(c) => self.bump(c),
            }
        }
        self.depth -= 1;
        self.pos = self.pos.min(self.len());
    }

    pub(super) fn backtick(&mut self, b: &mut Builder<'s>) {
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
                    self.bump(c);
                }
            }
        }
        if !closed {
            b.w.unterminated = true;
        }
        b.w.cmdsub = true;
        if self.depth >= MAX_DEPTH {
            b.w.add_reason("nesting too deep to read");
        } else {
            // The unescaped text is the backtick's own: copy what is read from it.
            let nested = CommandLine::parse_at(&inner, self.depth + 1, self.budget);
            b.w.add_nested(nested.into_owned());
        }
        self.push_raw_literal(b, start);
    }
}
