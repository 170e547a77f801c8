//! Quotes and escapes: double quotes and ANSI-C `$'...'` strings.
//!
//! Attack: spelling a command so a text match misses it — `"rm"`, `$'\x72\x6d'`, `$'\162m'`.
//! The quoted text is decoded the way bash decodes it, so what the matcher sees is what runs;
//! bash cuts a `$'...'` string at a NUL byte, and so does this.

use super::Lexer;
use super::word::Builder;

impl<'s> Lexer<'s, '_> {
    /// Double-quoted text up to `terminator`, or to the end of input for here-document bodies.
    pub(super) fn dquote(&mut self, b: &mut Builder<'s>, terminator: Option<char>) {
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
                    self.bump(c);
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
                    self.bump(c);
                }
            }
        }
    }

    /// `$'...'`, with the C escapes bash decodes (`$'\x72\x6d'` is `rm`). The position is just
    /// after the opening quote.
    pub(super) fn ansi_c(&mut self, b: &mut Builder<'s>) {
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
                    self.bump(c);
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
        self.bump(c);
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
                    self.bump(n);
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
}
