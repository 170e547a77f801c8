//! A call's specifier, parsed once per decision in the form its tool
//! needs, and the matching questions the engine asks of it.

use std::borrow::Cow;
use std::cell::OnceCell;

use warden_shell::text_path::{expand_home, is_within};

use crate::decision::concat;
use crate::engine::path_env;
use crate::facts::{Call, Env};
use crate::index::{DenyKeys, Probe};
use crate::path::normalize;
use crate::rule::{Rule, RuleList, SpecifierKind};
use crate::{ToolFacts, glob};

/// Whether a redirect target (`~` expanded, relative to the working
/// directory) lies inside the workspace.
fn writes_inside(target: &str, env: &Env<'_>) -> bool {
    expand_home(target, Some(env.home))
        .is_some_and(|t| normalize(&t, env.cwd).is_ok_and(|p| is_within(&p, env.workspace)))
}

#[allow(
    clippy::large_enum_variant,
    reason = "one per decision, on the stack: boxing the shell variant would cost an allocation"
)]
pub(crate) enum Prepared<'a> {
    /// The tool has no specifier: only unscoped rules apply.
    None,
    Shell {
        line: warden_shell::Checked<'a>,
        text: &'a str,
        /// The rule-index keys for deny and ask rules, once looked up.
        deny_keys: OnceCell<DenyKeys>,
    },
    /// The normalised path and, when it differs, the symlink-resolved one.
    Path {
        paths: Vec<String>,
        text: String,
    },
    Plain(&'a str),
    /// Code no rule can read (a non-shell language): matched as text by
    /// deny and ask rules, allowed only by an exact rule or the bare tool.
    Opaque(&'a str),
}

impl<'a> Prepared<'a> {
    pub fn new(call: &Call<'a>, env: &Env<'a>) -> Result<Prepared<'a>, String> {
        let Some(text) = call.specifier else {
            return Ok(Prepared::None);
        };
        // `text` is what decisions show; `line` the command line it holds.
        let shell = |line: &'a str| Prepared::Shell {
            line: warden_shell::Checked::new(
                warden_shell::CommandLine::parse(line),
                env.workspace,
                env.cwd,
                env.home,
            ),
            text,
            deny_keys: OnceCell::new(),
        };
        Ok(match call.tool.specifier_kind() {
            SpecifierKind::Shell => shell(text),
            SpecifierKind::Path => {
                let lexical = normalize(text, env.cwd)?;
                let mut paths = vec![lexical.clone()];
                if let Some(resolved) = call.resolved_path {
                    let resolved = normalize(resolved, env.cwd)?;
                    if resolved != lexical {
                        paths.push(resolved);
                    }
                }
                Prepared::Path {
                    paths,
                    text: lexical,
                }
            }
            SpecifierKind::Plain => Prepared::Plain(text),
            SpecifierKind::Code => match crate::rule::shell_source(text) {
                Some(source) => shell(source),
                None => Prepared::Opaque(text),
            },
        })
    }

    /// `tool(specifier)` as decisions show it.
    pub fn display(&self, name: &str) -> String {
        concat(&self.shown(name))
    }

    /// The parts of [`Prepared::display`].
    fn shown<'s>(&'s self, name: &'s str) -> [&'s str; 4] {
        match self {
            Prepared::None => [name, "", "", ""],
            Prepared::Shell { text, .. } | Prepared::Plain(text) | Prepared::Opaque(text) => {
                [name, "(", text, ")"]
            }
            Prepared::Path { text, .. } => [name, "(", text, ")"],
        }
    }

    /// `before`, [`Prepared::display`], then `after`, in one allocation: most reasons.
    pub fn describe(&self, name: &str, before: &str, after: &[&str]) -> String {
        let [a, b, c, d] = self.shown(name);
        let len = before.len() + a.len() + b.len() + c.len() + d.len();
        let mut out = String::with_capacity(len + after.iter().map(|p| p.len()).sum::<usize>());
        for p in [before, a, b, c, d]
            .into_iter()
            .chain(after.iter().copied())
        {
            out.push_str(p);
        }
        out
    }

    /// An allow rule covering exactly this call; `None` for a compound or
    /// unreadable command line, which no single rule should cover.
    pub fn exact_rule(&self, name: &str) -> Option<String> {
        Some(match self {
            Prepared::None => name.to_owned(),
            Prepared::Shell { line, .. } if line.subcommands().len() > 1 || line.is_opaque() => {
                return None;
            }
            Prepared::Shell { text, .. } | Prepared::Plain(text) | Prepared::Opaque(text) => {
                format!("{name}({text})")
            }
            Prepared::Path { text, .. } => {
                format!("{name}(/{})", text.trim_start_matches('/')).replacen("(/", "(//", 1)
            }
        })
    }

    /// What would allow the call, as advice in a reason.
    pub fn advice(&self, name: &str) -> Cow<'static, str> {
        match self.exact_rule(name) {
            Some(rule) => concat(&["approve it, or add an allow rule such as `", &rule, "`"]).into(),
            None => "approve it, or add allow rules covering each part of the command (parts the policy cannot \
                     read, such as `$(...)` or `sh -c`, need a person)"
                .into(),
        }
    }

    /// For deny and ask rules: does the rule fire on any part of the call?
    pub fn fires(&self, rule: &Rule, env: &Env<'_>) -> bool {
        if !rule.is_scoped() {
            return true;
        }
        match self {
            Prepared::None => false,
            Prepared::Shell { line, .. } => rule
                .shell()
                .is_some_and(|p| warden_shell::matches_any_pattern(p, line)),
            Prepared::Path { paths, .. } => {
                let penv = path_env(env);
                rule.path()
                    .is_some_and(|p| paths.iter().any(|path| p.matches(path, &penv)))
            }
            Prepared::Plain(text) | Prepared::Opaque(text) => {
                rule.raw_spec().is_some_and(|s| glob::matches(s, text))
            }
        }
    }

    /// What the rule index looks up for this call: deny matching (deny and
    /// ask rules) or allow matching.
    pub fn probe<'p>(&'p self, deny: bool, env: &Env<'p>) -> Probe<'p> {
        match self {
            Prepared::None => Probe::Unscoped,
            Prepared::Shell {
                line, deny_keys, ..
            } if deny => Probe::ShellDeny {
                line,
                keys: deny_keys,
            },
            Prepared::Shell { line, .. } => Probe::ShellAllow(line),
            Prepared::Path { paths, .. } => Probe::Paths(paths, path_env(env)),
            Prepared::Plain(text) | Prepared::Opaque(text) => Probe::Plain(text),
        }
    }

    /// For allow rules: do the rules of `list` for tool `name` cover the
    /// whole call? Returns the rule(s) to cite.
    pub fn covered_by(&self, list: &RuleList, name: &str, env: &Env<'_>) -> Option<String> {
        // A wildcard rule such as `echo *` must not become a way to write
        // anywhere: with an output redirect leaving the workspace, only
        // rules without wildcards can allow the line.
        // Nor a write redirection, an option that writes or runs, a glob
        // after a command that has such options, or a very long line.
        let writes_outside = match self {
            Prepared::Shell { line, text, .. } => {
                line.any_write_target(&mut |t| !writes_inside(t, env))
                    || line.needs_own_decision(text)
            }
            _ => false,
        };
        let usable = |r: &Rule| !writes_outside || r.shell().is_some_and(|p| !p.has_wildcard());
        // Only the candidates can cover the call, alone or part by part.
        let mut rules = list.candidates(name, &self.probe(false, env));
        rules.retain(usable);
        // First match wins: the first rule that covers the call alone.
        let alone = rules.iter().find(|r| {
            !r.is_scoped()
                || match self {
                    Prepared::None => false,
                    Prepared::Shell { line, .. } => r
                        .shell()
                        .is_some_and(|p| warden_shell::allowed_by_patterns(&[p], line)),
                    Prepared::Path { paths, .. } => {
                        let penv = path_env(env);
                        r.path()
                            .is_some_and(|p| paths.iter().all(|path| p.covers(path, &penv)))
                    }
                    Prepared::Plain(text) => r.raw_spec().is_some_and(|s| glob::matches(s, text)),
                    // Code no rule can read: only the exact text, no wildcard.
                    Prepared::Opaque(text) => r.raw_spec() == Some(*text),
                }
        });
        if let Some(r) = alone {
            return Some(r.text().to_owned());
        }
        // A compound command may be covered part by part by several rules.
        match self {
            Prepared::Shell { line, .. } => {
                let patterns = || rules.iter().filter_map(Rule::shell);
                // Cites every usable rule for the tool, as it always has.
                warden_shell::allowed_by_each(patterns, line).then(|| {
                    list.for_tool(name)
                        .filter(|r| usable(r))
                        .map(Rule::text)
                        .collect::<Vec<_>>()
                        .join("` + `")
                })
            }
            _ => None,
        }
    }

    /// A destructive command or path that always needs a person.
    pub fn circuit_breaker(&self, tool: &ToolFacts<'_>, env: &Env<'_>) -> Option<String> {
        if tool.action_type == crate::TOOL_CREATE {
            return Some(format!(
                "`{}` creates a tool (`tool:create`)",
                tool.normalized_name()
            ));
        }
        if let Some(reason) = tool.vcs_op().and_then(crate::vcs::VcsOp::breaker) {
            return Some(reason.to_owned());
        }
        match self {
            Prepared::Shell { line, .. } => line.circuit_breaker(),
            Prepared::Path { paths, .. } if tool.action_type == "code:delete" => paths.iter().find_map(|p| {
                // The working directory is where a file tool's relative
                // paths land: the workspace, or the granted directory.
                let critical = p == "/"
                    || p.matches('/').count() == 1
                    || is_within(env.workspace, p)
                    || is_within(env.cwd, p)
                    || is_within(env.project, p)
                    || is_within(env.home, p);
                critical.then(|| format!("deleting `{p}` would remove a root, the home directory, the workspace or the directory the call works in"))
            }),
            _ => None,
        }
    }

    /// Why a shell line cannot be read at all (a command or a destructive
    /// command's target named through an expansion, commands read from a
    /// pipe, arithmetic evaluation of values), if it cannot.
    pub fn unread_reason(&self) -> Option<&str> {
        match self {
            Prepared::Shell { line, .. } => line.unread_reason(),
            _ => None,
        }
    }

    pub fn is_read_only_command(&self) -> bool {
        match self {
            Prepared::Shell { line, .. } => line.is_read_only(),
            _ => false,
        }
    }

    /// An edit-safe file tool (write or create, not delete or move) on
    /// paths all inside the workspace: what accept-edits mode allows.
    /// Accept-edits accepts edits, not deletions: `code:delete` and
    /// `code:refactor` (refactors rename and move files) are not edits,
    /// nor is a tool whose name says it deletes or moves, whatever action
    /// type it declares (`fs_rename` declared `code:write`).
    pub fn is_workspace_edit(&self, tool: &ToolFacts<'_>, env: &Env<'_>) -> bool {
        match self {
            Prepared::Path { paths, .. } => {
                matches!(
                    tool.action_type,
                    "code:write" | "code:create" | "test:write" | "docs:write"
                ) && !deletes_or_moves(&tool.normalized_name())
                    && paths.iter().all(|p| is_within(p, env.workspace))
            }
            _ => false,
        }
    }
}

/// A tool name with a word for deleting or moving (`fs_delete`,
/// `file_rename`, `fs_mv`, `unlink`): names are the plugin author's, so
/// this reads what the tool says it does, not what an agent wrote.
fn deletes_or_moves(name: &str) -> bool {
    const VERBS: &[&str] = &[
        "delete", "remove", "rm", "rmdir", "unlink", "rename", "move", "mv", "erase", "purge",
        "trash", "destroy", "wipe",
    ];
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| VERBS.contains(&word))
        || ["delete", "remove", "rename", "unlink"]
            .iter()
            .any(|v| name.contains(v))
}

#[cfg(test)]
mod tests {
    #[test]
    fn advice_anchors_absolute_paths() {
        let p = super::Prepared::Path {
            paths: vec!["/w/a.txt".into()],
            text: "/w/a.txt".into(),
        };
        assert!(p.advice("fs_write").ends_with("`fs_write(//w/a.txt)`"));
    }
}
