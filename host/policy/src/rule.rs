//! Rules: `tool` or `tool(specifier)`, with `*` globs in the tool name.
//! A bare tool matches every call of it; a scoped rule only calls whose
//! specifier matches. The specifier is read as a shell pattern, a path
//! pattern or a plain glob, depending on the tool it is matched against.

use crate::index::{Bucket, NameMap, Probe};
use crate::path::PathPattern;
use crate::{PolicyError, glob};

/// How a tool's specifier is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecifierKind {
    /// A shell command line (terminal tools).
    Shell,
    /// A file path (file-system tools).
    Path,
    /// Anything else: `*` globs over the text.
    Plain,
    /// Code in a language (code-execution tools): `LANGUAGE: SOURCE`.
    /// Shell languages are read as shell command lines; other code is
    /// opaque: only an exact rule (or the bare tool) allows it.
    Code,
}

/// The languages whose source is a shell command line.
pub(crate) const SHELL_LANGUAGES: &[&str] = &["sh", "bash"];

/// `SOURCE` of a `sh: SOURCE` or `bash: SOURCE` specifier (a code-execution
/// rule or call), or `None` for any other text.
pub(crate) fn shell_source(text: &str) -> Option<&str> {
    let (language, source) = text.split_once(": ")?;
    SHELL_LANGUAGES.contains(&language.trim()).then_some(source)
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
    shell: warden_shell::Pattern,
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
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._*-".contains(c))
        {
            return Err(invalid(
                "the tool part must be a tool name or a `*` glob such as `fs_*`",
            ));
        }
        // The old dotted spelling (`fs.read`) names the same tool as
        // `fs_read`; the rule is read, and cited, with the new name.
        let tool = crate::renamed_tool(&tool).unwrap_or(tool);
        let renamed = crate::renamed_rule(trimmed);
        let trimmed = renamed.as_deref().unwrap_or(trimmed);
        if spec.is_some_and(|s| s.contains('\0')) {
            return Err(invalid("the specifier contains a NUL byte"));
        }
        let spec = spec.map(|raw| Spec {
            raw: raw.to_owned(),
            // A code-execution rule for shell code matches the source as a
            // shell line, like a terminal rule.
            shell: warden_shell::Pattern::parse(shell_source(raw).unwrap_or(raw)),
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

    /// The tool part as written (lower-cased): a name or a `*` glob.
    pub fn tool_pattern(&self) -> &str {
        &self.tool
    }

    pub fn tool_matches(&self, tool: &str) -> bool {
        glob::matches(&self.tool, tool)
    }

    pub fn is_scoped(&self) -> bool {
        self.spec.is_some()
    }

    /// The specifier as written, if the rule has one.
    pub fn raw_spec(&self) -> Option<&str> {
        self.spec.as_ref().map(|s| s.raw.as_str())
    }

    pub(crate) fn shell(&self) -> Option<&warden_shell::Pattern> {
        self.spec.as_ref().map(|s| &s.shell)
    }

    pub(crate) fn path(&self) -> Option<&PathPattern> {
        self.spec.as_ref().map(|s| &s.path)
    }
}

/// One list of rules, indexed by tool name so a decision looks only at
/// the rules that can apply: those naming the tool exactly, and the
/// globbed ones, still in the order they were written. Inside each tool's
/// rules a second index ([`Bucket`]) skips the rules whose specifier cannot
/// match.
#[derive(Debug, Clone, Default)]
pub struct RuleList {
    rules: Vec<Rule>,
    by_tool: NameMap<Bucket>,
    globbed: Bucket,
}

impl RuleList {
    fn push(&mut self, rule: Rule) {
        let i = self.rules.len();
        if rule.tool.contains('*') {
            self.globbed.push(i, &rule);
        } else {
            self.by_tool
                .entry(rule.tool.clone())
                .or_default()
                .push(i, &rule);
        }
        self.rules.push(rule);
    }

    /// The rules whose tool part matches `tool`, in written order.
    pub fn for_tool<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a Rule> + 'a {
        let exact = self.by_tool.get(tool).map_or(&[][..], Bucket::all);
        let globbed = self
            .globbed
            .all()
            .iter()
            .copied()
            .filter(move |&i| self.rules.get(i).is_some_and(|r| r.tool_matches(tool)));
        merge(exact.iter().copied(), globbed).filter_map(move |i| self.rules.get(i))
    }

    /// The rules for `tool` that may match `probe`, in written order: every
    /// rule of [`RuleList::for_tool`] that matches is among them.
    pub(crate) fn candidates(&self, tool: &str, probe: &Probe<'_>) -> Candidates<'_> {
        let mut idx = Vec::new();
        if let Some(bucket) = self.by_tool.get(tool) {
            bucket.candidates(probe, &mut idx);
        }
        let mut globbed = Vec::new();
        self.globbed.candidates(probe, &mut globbed);
        idx.extend(
            globbed
                .into_iter()
                .filter(|&i| self.rules.get(i).is_some_and(|r| r.tool_matches(tool))),
        );
        idx.sort_unstable();
        idx.dedup();
        Candidates {
            rules: &self.rules,
            idx,
        }
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter()
    }
}

/// The rules a call may match, in written order (see [`RuleList::candidates`]), kept as indices
/// so finding them costs one vector.
#[derive(Debug)]
pub(crate) struct Candidates<'l> {
    rules: &'l [Rule],
    idx: Vec<usize>,
}

impl<'l> Candidates<'l> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'l Rule> + '_ {
        let rules = self.rules;
        self.idx.iter().filter_map(move |&i| rules.get(i))
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.idx.is_empty()
    }

    /// Keeps only the rules for which `keep` holds.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Rule) -> bool) {
        let rules = self.rules;
        self.idx.retain(|&i| rules.get(i).is_some_and(&mut keep));
    }
}

/// Merges two ascending index sequences.
fn merge(
    a: impl Iterator<Item = usize>,
    b: impl Iterator<Item = usize>,
) -> impl Iterator<Item = usize> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if x <= y => a.next(),
        (Some(_), Some(_)) | (None, Some(_)) => b.next(),
        (Some(_), None) => a.next(),
        (None, None) => None,
    })
}

/// The three lists of a policy. Decision order is deny, then ask, then
/// allow; inside a list the first match wins, and specificity never
/// reorders anything.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub deny: RuleList,
    pub ask: RuleList,
    pub allow: RuleList,
}

impl RuleSet {
    pub fn parse(
        allow: &[String],
        ask: &[String],
        deny: &[String],
    ) -> Result<RuleSet, PolicyError> {
        let mut set = RuleSet::default();
        for (list, texts, allowing) in [
            (&mut set.deny, deny, false),
            (&mut set.ask, ask, false),
            (&mut set.allow, allow, true),
        ] {
            for text in texts {
                let rule = Rule::parse(text)?;
                if allowing && crate::BREAKER_TOOLS.contains(&rule.tool_pattern()) {
                    return Err(PolicyError::InvalidRule {
                        rule: text.clone(),
                        problem: format!(
                            "`{}` creates tools (`tool:create`), which always asks a person; \
                             no rule may allow it",
                            rule.tool_pattern()
                        ),
                    });
                }
                list.push(rule);
            }
        }
        Ok(set)
    }

    /// Appends another set's rules after this one's.
    /// Adds `other`'s rules after these; a rule already in the same list
    /// (by its text) is not added again.
    pub fn extend(&mut self, other: &RuleSet) {
        for (mine, theirs) in [
            (&mut self.deny, &other.deny),
            (&mut self.ask, &other.ask),
            (&mut self.allow, &other.allow),
        ] {
            for rule in theirs.iter() {
                if !mine.iter().any(|r| r.text == rule.text) {
                    mine.push(rule.clone());
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.deny.len() + self.ask.len() + self.allow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::RuleSet;

    fn set(allow: &[&str]) -> RuleSet {
        let allow: Vec<String> = allow.iter().map(|s| (*s).to_owned()).collect();
        RuleSet::parse(&allow, &[], &[]).unwrap()
    }

    /// A rule added again (an "always allow" answered twice, or a stored
    /// rule a replica reads back after adding it itself) is not a second
    /// rule: lists, counts and the work per decision stay as they were.
    #[test]
    fn a_rule_added_again_is_not_a_second_rule() {
        let mut rules = set(&["fs_read(src/**)"]);
        rules.extend(&set(&["fs_read(src/**)"]));
        rules.extend(&set(&["fs_read(src/**)", "fs_write(docs/**)"]));
        assert_eq!(rules.len(), 2);
        let texts: Vec<&str> = rules.allow.iter().map(|r| r.text()).collect();
        assert_eq!(texts, ["fs_read(src/**)", "fs_write(docs/**)"]);
    }
}
