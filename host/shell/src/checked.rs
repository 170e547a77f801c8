//! A command line checked against one environment: the places (workspace, working directory,
//! home) its path checks need are worked out once, on first use, however many questions the
//! engine asks.

use std::cell::OnceCell;

use crate::paths::Places;
use crate::{CommandLine, breakers, own_decision, readonly};

/// A command line with the places its checks judge paths against, worked out once.
#[derive(Debug)]
pub struct Checked<'a> {
    line: CommandLine<'a>,
    workspace: &'a str,
    cwd: &'a str,
    home: &'a str,
    places: OnceCell<Places<'a>>,
}

impl<'a> std::ops::Deref for Checked<'a> {
    type Target = CommandLine<'a>;

    fn deref(&self) -> &CommandLine<'a> {
        &self.line
    }
}

impl<'a> Checked<'a> {
    /// `line`, to be judged against `workspace`, `cwd` and `home` as [`crate::is_read_only`]
    /// and [`crate::circuit_breaker`] judge them; nothing is worked out until a check needs it.
    pub fn new(line: CommandLine<'a>, workspace: &'a str, cwd: &'a str, home: &'a str) -> Self {
        Checked {
            line,
            workspace,
            cwd,
            home,
            places: OnceCell::new(),
        }
    }

    fn places(&self) -> &Places<'a> {
        self.places
            .get_or_init(|| Places::new(self.workspace, self.cwd, self.home))
    }

    /// [`crate::is_read_only`] in the checked places.
    pub fn is_read_only(&self) -> bool {
        readonly::is_read_only(&self.line, self.places())
    }

    /// Whether only rules without wildcards may cover this line: it is longer than
    /// [`crate::MAX_WILDCARD_LINE`], or a command on it can write files or run programs through
    /// its options (`sed -i`, `find -delete`, `git -c`, a write redirection, ...); `text` is the
    /// line as written.
    pub fn needs_own_decision(&self, text: &str) -> bool {
        own_decision::needs_own_decision(&self.line, text, self.places())
    }

    /// [`crate::circuit_breaker`] in the checked places.
    pub fn circuit_breaker(&self) -> Option<String> {
        breakers::circuit_breaker(&self.line, self.places())
    }
}
