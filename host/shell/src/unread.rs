//! Parts of a line the analyser cannot read at all: what runs, or what a destructive command
//! acts on, is only known when the line runs.
//!
//! Attack: talking around deny rules and circuit breakers with anything the text does not say.
//! `x=rm; $x -rf src` passes a deny rule on `rm`; `X=/workspace; rm -rf $X` and
//! `rm -rf${IFS}/workspace` pass the breaker on deleting the workspace; `echo /workspace | xargs
//! rm -rf`, `echo cm0g... | base64 -d | sh` and `python3 < f` run commands that arrive on a
//! pipe; `y[x]=1`, `(( x ))` and `test -v 'a[i]'` evaluate a variable's value as arithmetic,
//! which runs any `$(...)` in it. Every such part is opaque (no wildcard allow rule covers it,
//! it is never read-only), and more: it is *unread*, and the policy never lets an unread line
//! run without a person in autonomous mode, since no rule and no breaker could have seen what it
//! does. Opaque parts that were read (`echo $(date)`, `sh -c 'ls'`: the nested text is parsed
//! and checked) are not unread.

use crate::{CommandLine, SubCommand};

/// A command word is a parameter expansion (`$x -rf src`).
pub(crate) const VARIABLE_COMMAND: &str = "variable in command position";
/// A command word is a command or process substitution (`$(echo rm) -rf src`).
pub(crate) const SUBSTITUTED_COMMAND: &str = "command named by a substitution";
/// An operand of a destructive command is only known at run time (`rm -rf $X`).
pub(crate) const EXPANDED_TARGET: &str =
    "the target of a destructive command is named through an expansion";
/// An interpreter with no program named reads it from its input (`... | python3`).
pub(crate) const INTERPRETER_INPUT: &str = "interpreter reads its program from its input";
/// Text another shell parses after this one expanded it (`eval "$x"`, `sh -c "ls $x"`).
pub(crate) const EXPANDED_CODE: &str = "command text only known at run time";
/// Bash evaluates a name or substitution as arithmetic (`(( x ))`, `test -v 'a[i]'`).
pub(crate) const EVALUATED: &str =
    "arithmetic or a subscript evaluated at run time (a value's `$(...)` runs)";

/// A variable bash runs as code later is set (`PS4='$(rm -rf src)'; set -x`).
pub(crate) const CODE_VARIABLE: &str =
    "sets a variable bash runs as code (a prompt, PROMPT_COMMAND, BASH_ENV)";
/// Completion runs a command or function, or expands a word list (`compgen -W '$(...)'`).
pub(crate) const COMPLETION: &str = "completion runs or expands text at run time";

/// Reasons (see [`crate::CommandLine::opaque_reasons`]) that mean the line was not read.
const UNREAD: &[&str] = &[
    VARIABLE_COMMAND,
    SUBSTITUTED_COMMAND,
    EXPANDED_TARGET,
    INTERPRETER_INPUT,
    EXPANDED_CODE,
    EVALUATED,
    CODE_VARIABLE,
    COMPLETION,
    "loads a builtin from a shared object",
    "glob in command name",
    "sources a file",
    "alias definition",
    "xargs runs a command with arguments from its input",
    "shell reads commands from its input",
    "shell -c without a command string",
    "nesting too deep to read",
    "brace expansion too large to read",
    "unterminated quote or substitution",
    "redirection target only known at run time",
    "redirection without a target",
    "ambiguous redirect (brace expansion)",
    "case statement",
    // The analyser lost the line's structure: what it split may not be what bash runs.
    "unexpected `(`",
    "unbalanced `)`",
    "unbalanced `}`",
    "unclosed `(` or `{`",
];

fn is_unread(reason: &str) -> bool {
    UNREAD.contains(&reason)
}

impl CommandLine<'_> {
    /// Why some part of the line (nested command text included) cannot be read at all: a
    /// command named through an expansion, a destructive command's target only known at run
    /// time, commands read from a pipe, arithmetic evaluation of values. `None` when every
    /// opaque part was still read (`echo $(date)`). Such a line is always opaque too.
    pub fn unread_reason(&self) -> Option<&str> {
        self.reasons
            .iter()
            .map(String::as_str)
            .find(|r| is_unread(r))
            .or_else(|| self.subs.iter().find_map(SubCommand::unread_reason))
    }
}

impl SubCommand<'_> {
    /// [`CommandLine::unread_reason`] for this subcommand and the text nested in it.
    pub fn unread_reason(&self) -> Option<&str> {
        self.reasons
            .iter()
            .map(String::as_str)
            .find(|r| is_unread(r))
            .or_else(|| self.nested.iter().find_map(CommandLine::unread_reason))
    }
}
