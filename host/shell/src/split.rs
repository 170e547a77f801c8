//! Splitter: turns tokens into the flat list of simple commands bash would run.
//!
//! A rule written for one command must not be satisfied by a line that runs two, so the line is
//! cut at every `&&`, `||`, `;`, `|`, `|&`, `&` and newline, and the contents of subshells,
//! groups, loops, conditionals and function bodies become subcommands of their own. Reserved
//! words (`if`, `then`, `do`, `!`, `{`, ...) are dropped so `then rm -rf /` is seen as
//! `rm -rf /`. Function definitions are recorded so fork bombs are caught under any name.

use std::borrow::Cow;
use std::cell::Cell;

use super::classify::build_sub;
use super::evaluated::expr_inert;
use super::lex::{Op, RawRedirect, Tok, Word};
use super::unread::EVALUATED;
use super::{CommandLine, FunctionDef, SubCommand};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Paren,
    Brace,
}

#[derive(Debug)]
struct OpenFn {
    name: String,
    /// Group depth outside the body; the body ends when the stack returns to it.
    level: usize,
    first_sub: usize,
    started: bool,
    concurrent: bool,
}

struct Parser<'s, 'b> {
    depth: usize,
    budget: &'b Cell<usize>,
    subs: Vec<SubCommand<'s>>,
    reasons: Vec<String>,
    functions: Vec<FunctionDef>,
    words: Vec<Word<'s>>,
    redirs: Vec<RawRedirect<'s>>,
    cur_reasons: Vec<String>,
    for_header: bool,
    /// The last word was the `time` keyword (or its `-p`): its options may follow.
    after_time: bool,
    /// The command follows `|` or `|&`: `time` there is a program, not the keyword.
    after_pipe: bool,
    groups: Vec<Group>,
    open_fns: Vec<OpenFn>,
    /// After `function NAME`: the `()` that may follow is part of the definition.
    fn_keyword_name: bool,
    expect_fn_name: bool,
    /// Inside `(( ))`: the group depth outside it. Its words are an arithmetic expression.
    arith: Option<usize>,
    /// Inside `[[ ]]`: `&&`, `||` and parentheses are part of the test, not command lists.
    dbracket: bool,
}

/// Builds a command line from a token sequence.
pub(crate) fn build<'s>(toks: Vec<Tok<'s>>, depth: usize, budget: &Cell<usize>) -> CommandLine<'s> {
    let mut p = Parser {
        depth,
        budget,
        subs: Vec::new(),
        reasons: Vec::new(),
        functions: Vec::new(),
        words: Vec::new(),
        redirs: Vec::new(),
        cur_reasons: Vec::new(),
        for_header: false,
        after_time: false,
        after_pipe: false,
        groups: Vec::new(),
        open_fns: Vec::new(),
        fn_keyword_name: false,
        expect_fn_name: false,
        arith: None,
        dbracket: false,
    };
    let mut it = toks.into_iter().peekable();
    while let Some(tok) = it.next() {
        let before_paren = matches!(it.peek(), Some(Tok::Op(Op::RParen)));
        if p.dbracket
            && let Tok::Op(op @ (Op::AndIf | Op::OrIf | Op::LParen | Op::RParen)) = &tok
        {
            let text = match op {
                Op::AndIf => "&&",
                Op::OrIf => "||",
                Op::LParen => "(",
                _ => ")",
            };
            p.words.push(Word::bare(Cow::Borrowed(text)));
            continue;
        }
        match tok {
            Tok::Word(w) => {
                p.fn_keyword_name = false;
                p.word(w);
            }
            Tok::Redir(r) => p.redirs.push(r),
            Tok::Op(Op::LParen) => {
                p.after_pipe = false;
                if p.fn_keyword_name && before_paren {
                    it.next();
                    p.fn_keyword_name = false;
                } else if p.words.is_empty() && p.redirs.is_empty() {
                    // `((` opens an arithmetic command. Its words stay a command too, so
                    // `((rm x) )`, nested subshells to bash, is still seen running `rm`.
                    if p.arith.is_none() && matches!(it.peek(), Some(Tok::Op(Op::LParen))) {
                        p.arith = Some(p.groups.len());
                    }
                    p.open_group(Group::Paren);
                } else if before_paren && p.words.len() == 1 {
                    it.next();
                    if let Some(name) = p.words.pop() {
                        p.define_function(name.text.into_owned());
                    }
                } else {
                    p.cur_reasons.push("unexpected `(`".to_string());
                    p.finish();
                    p.open_group(Group::Paren);
                }
            }
            Tok::Op(Op::RParen) => {
                p.finish();
                p.close_group(Group::Paren);
            }
            Tok::Op(op) => {
                p.fn_keyword_name = false;
                p.finish();
                p.after_pipe = matches!(op, Op::Pipe | Op::PipeAll);
                if matches!(op, Op::Pipe | Op::PipeAll | Op::Amp) {
                    for f in p.open_fns.iter_mut().filter(|f| f.started) {
                        f.concurrent = true;
                    }
                }
            }
        }
    }
    p.end()
}

impl<'s> Parser<'s, '_> {
    fn word(&mut self, mut w: Word<'s>) {
        // Only a pipeline's first word can be the `time` keyword.
        let pipeline_start =
            !std::mem::replace(&mut self.after_pipe, false) && self.redirs.is_empty();
        if self.expect_fn_name {
            self.expect_fn_name = false;
            self.define_function(w.text.into_owned());
            self.fn_keyword_name = true;
            return;
        }
        // `f(){:|:&}` is not valid bash, but it is written as a fork bomb: read `{:` as `{ :`.
        if let Some(f) = self.open_fns.last()
            && !f.started
            && !w.quoted
            && w.text.len() > 1
            && let Some(rest) = w.text.strip_prefix('{')
        {
            w.text = Cow::Owned(rest.to_owned());
            self.open_group(Group::Brace);
        }
        if let Some(f) = self.open_fns.last()
            && !f.started
            && w.text != "{"
        {
            // A body that is not a group is a syntax error; end the definition here.
            self.close_function();
        }
        if self.words.is_empty() && !w.quoted && !w.expands() {
            // `time [-p] [--] pipeline` is bash's keyword, not the `time` program.
            if self.after_time && matches!(w.text.as_ref(), "-p" | "--") {
                return;
            }
            self.after_time = pipeline_start && w.text == "time";
            if self.after_time {
                return;
            }
            if w.text == "[[" {
                self.dbracket = true;
            }
            match w.text.as_ref() {
                "if" | "then" | "else" | "elif" | "fi" | "do" | "done" | "while" | "until"
                | "!" | "esac" | "coproc" => return,
                "{" => {
                    self.open_group(Group::Brace);
                    return;
                }
                "}" => {
                    self.close_group(Group::Brace);
                    return;
                }
                "function" => {
                    self.expect_fn_name = true;
                    return;
                }
                "case" => self.cur_reasons.push("case statement".to_string()),
                "for" | "select" => self.for_header = true,
                _ => {}
            }
        }
        self.after_time = false;
        if self.dbracket && !w.quoted && w.text == "]]" {
            self.dbracket = false;
        }
        self.words.push(w);
    }

    fn define_function(&mut self, name: String) {
        self.finish();
        let sub = build_sub(
            vec![Word::bare(Cow::Owned(name.clone()))],
            Vec::new(),
            vec!["function definition".to_string()],
            self.depth,
            false,
            self.budget,
        );
        self.subs.push(sub);
        self.open_fns.push(OpenFn {
            name,
            level: self.groups.len(),
            first_sub: self.subs.len(),
            started: false,
            concurrent: false,
        });
    }

    fn close_function(&mut self) {
        if let Some(f) = self.open_fns.pop() {
            self.functions.push(FunctionDef {
                name: f.name,
                body: f.first_sub..self.subs.len(),
                concurrent: f.concurrent,
            });
        }
    }

    fn open_group(&mut self, g: Group) {
        self.groups.push(g);
        let len = self.groups.len();
        let subs = self.subs.len();
        if let Some(f) = self.open_fns.last_mut()
            && !f.started
            && len == f.level + 1
        {
            f.started = true;
            f.first_sub = subs;
        }
    }

    fn close_group(&mut self, g: Group) {
        if self.groups.last() != Some(&g) {
            let what = if g == Group::Paren { "`)`" } else { "`}`" };
            self.reasons.push(format!("unbalanced {what}"));
            return;
        }
        self.groups.pop();
        if self.arith == Some(self.groups.len()) {
            self.arith = None;
        }
        while self
            .open_fns
            .last()
            .is_some_and(|f| f.started && f.level == self.groups.len())
        {
            self.close_function();
        }
    }

    fn finish(&mut self) {
        let words = std::mem::take(&mut self.words);
        let redirs = std::mem::take(&mut self.redirs);
        let reasons = std::mem::take(&mut self.cur_reasons);
        let for_header = std::mem::replace(&mut self.for_header, false);
        self.after_time = false;
        self.dbracket = false;
        let mut reasons = reasons;
        if self
            .arith
            .is_some_and(|outside| self.groups.len() > outside)
        {
            let inert = words.iter().all(|w| expr_inert(&w.text))
                && redirs
                    .iter()
                    .all(|r| r.target.as_ref().is_none_or(|t| expr_inert(&t.text)));
            if !inert && !reasons.iter().any(|r| r == EVALUATED) {
                reasons.push(EVALUATED.to_owned());
            }
        }
        if words.is_empty() && redirs.is_empty() {
            self.reasons.extend(reasons);
            return;
        }
        let sub = build_sub(words, redirs, reasons, self.depth, for_header, self.budget);
        self.subs.push(sub);
    }

    fn end(mut self) -> CommandLine<'s> {
        self.finish();
        if self.expect_fn_name {
            self.reasons.push("function definition".to_string());
        }
        if !self.groups.is_empty() {
            self.reasons.push("unclosed `(` or `{`".to_string());
        }
        while !self.open_fns.is_empty() {
            self.close_function();
        }
        // `declare -i n; n='a[$(rm -rf src)]'`: what is later assigned to a variable with the
        // integer or reference attribute is evaluated.
        if let Some(at) = self
            .subs
            .iter()
            .position(|s| super::evaluated::gives_attribute(&s.words))
            && self
                .subs
                .iter()
                .enumerate()
                .any(|(i, s)| i != at && super::evaluated::assigns_unknown(&s.words))
        {
            self.reasons.push(EVALUATED.to_owned());
        }
        let mut reasons: Vec<String> = Vec::new();
        for r in self.reasons {
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
        CommandLine {
            subs: self.subs,
            reasons,
            functions: self.functions,
            len: 0,
        }
    }
}
