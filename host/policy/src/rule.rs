//! Rules: `tool` or `tool(specifier)`, with `*` globs in the tool name.
//! A bare tool matches every call of it; a scoped rule only calls whose
//! specifier matches. The specifier is read as a shell pattern, a path
//! pattern or a plain glob, depending on the tool it is matched against.

use crate::path::PathPattern;
use crate::{PolicyError, glob, shell};

/// How a tool's specifier is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecifierKind {
    /// A shell command line (terminal tools).
    Shell,
    /// A file path (file-system tools).
    Path,
    /// Anything else: `*` globs over the text.
    Plain,
}

#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    spec: Option<Spec>,
}

#[derive(Debug, Clone)]
struct Spec {
    raw: String,
    shell: shell::Pattern,
    path: PathPattern,
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, PolicyError> {
        let invalid = |problem: &str| PolicyError::InvalidRule {
            rule: text.to_owned(),
            problem: problem.to_owned(),
        };
        let trimmed = text.trim();
        let (tool, spec) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let inner = trimmed[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| invalid("a scoped rule ends with `)`: tool(specifier)"))?;
                (trimmed[..open].trim_end(), Some(inner))
            }
        };
        let tool = tool.to_ascii_lowercase();
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._*".contains(c))
        {
            return Err(invalid(
                "the tool part must be a tool name or a `*` glob such as `fs.*`",
            ));
        }
        if spec.is_some_and(|s| s.contains('\0')) {
            return Err(invalid("the specifier contains a NUL byte"));
        }
        let spec = spec.map(|raw| Spec {
            raw: raw.to_owned(),
            shell: shell::Pattern::parse(raw),
            path: PathPattern::parse(raw),
        });
        Ok(Rule {
            text: trimmed.to_owned(),
            tool,
            spec,
        })
    }

    /// The rule as written (trimmed): what a decision cites.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn tool_matches(&self, tool: &str) -> bool {
        glob::matches(&self.tool, tool)
    }

    pub fn is_scoped(&self) -> bool {
        self.spec.is_some()
    }

    pub(crate) fn raw_spec(&self) -> Option<&str> {
        self.spec.as_ref().map(|s| s.raw.as_str())
    }

    pub(crate) fn shell(&self) -> Option<&shell::Pattern> {
        self.spec.as_ref().map(|s| &s.shell)
    }

    pub(crate) fn path(&self) -> Option<&PathPattern> {
        self.spec.as_ref().map(|s| &s.path)
    }
}

/// The three lists of a policy. Decision order is deny, then ask, then
/// allow; inside a list the first match wins, and specificity never
/// reorders anything.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub deny: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub allow: Vec<Rule>,
}

impl RuleSet {
    pub fn parse(
        allow: &[String],
        ask: &[String],
        deny: &[String],
    ) -> Result<RuleSet, PolicyError> {
        let all = |list: &[String]| {
            list.iter()
                .map(|r| Rule::parse(r))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(RuleSet {
            deny: all(deny)?,
            ask: all(ask)?,
            allow: all(allow)?,
        })
    }

    /// Appends another set's rules after this one's.
    pub fn extend(&mut self, other: &RuleSet) {
        self.deny.extend(other.deny.iter().cloned());
        self.ask.extend(other.ask.iter().cloned());
        self.allow.extend(other.allow.iter().cloned());
    }

    pub fn len(&self) -> usize {
        self.deny.len() + self.ask.len() + self.allow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
