//! Redirections and here-documents.
//!
//! Attack: a write hidden in a redirection (`cat x > ~/.bashrc`), or commands hidden in a
//! here-document. A here-document body is consumed after its line so its lines are never read
//! as commands of the line itself, and when its delimiter is unquoted the body is expanded by
//! bash, so the substitutions in it are parsed like any others.

use super::word::Builder;
use super::{Lexer, RawRedirect, Tok};
use crate::RedirectKind;

pub(super) struct PendingHereDoc {
    tok: usize,
    delim: String,
    strip_tabs: bool,
    expands: bool,
}

impl<'s> Lexer<'s, '_> {
    pub(super) fn lex_redirect(
        &mut self,
        fd: Option<u32>,
        toks: &mut Vec<Tok<'s>>,
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
                        w.add_reason("ambiguous redirect (brace expansion)");
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
                    delim: t.text.to_string(),
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
    pub(super) fn read_heredocs(
        &mut self,
        toks: &mut [Tok<'s>],
        pending: &mut Vec<PendingHereDoc>,
    ) {
        for doc in pending.drain(..) {
            let mut body = String::new();
            while self.pos < self.len() {
                let start = self.pos;
                let end = self
                    .slice(start, self.len())
                    .find('\n')
                    .map_or(self.len(), |at| start + at);
                let line = self.slice(start, end);
                self.pos = if end < self.len() { end + 1 } else { end };
                let cmp = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if cmp == doc.delim {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if !doc.expands || body.is_empty() {
                continue;
            }
            let mut sub = Lexer::new(&body, self.depth, self.budget);
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
}
