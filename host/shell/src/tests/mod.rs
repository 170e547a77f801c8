//! Tests for shell matching: one file per part of the module, plus property tests.

mod allow;
mod breakers;
mod deny;
mod lex;
mod opaque;
mod pattern;
mod props;
mod readonly;
mod split;
mod unread;

use super::CommandLine;

pub(super) const WS: &str = "/work/proj";
pub(super) const HOME: &str = "/home/agent";

pub(super) fn parse(s: &str) -> CommandLine<'_> {
    CommandLine::parse(s)
}

/// The words of each top-level subcommand.
pub(super) fn words(s: &str) -> Vec<Vec<String>> {
    parse(s)
        .subcommands()
        .iter()
        .map(|c| c.words().iter().map(|w| w.to_string()).collect())
        .collect()
}

/// The text of each top-level subcommand.
pub(super) fn texts(s: &str) -> Vec<String> {
    parse(s).subcommands().iter().map(|c| c.text()).collect()
}

pub(super) fn deny(pattern: &str, line: &str) -> bool {
    super::matches_any(pattern, &parse(line))
}

pub(super) fn allow(patterns: &[&str], line: &str) -> bool {
    super::allowed_by(patterns, &parse(line))
}

pub(super) fn read_only(line: &str) -> bool {
    super::is_read_only(&parse(line), WS, WS, HOME)
}

pub(super) fn breaker(line: &str) -> Option<String> {
    super::circuit_breaker(&parse(line), WS, WS, HOME)
}
