//! Tools were named `plugin.tool`; they are `plugin_tool` now, the only
//! spelling model APIs accept for a function. Rules, tool lists and
//! capabilities written the old way keep working for one release: they
//! are read with the new name, and [`PolicyConfig::renamed_tools`] names
//! each so the operator can rewrite it.

use crate::config::{PolicyConfig, RulesConfig};

/// The new spelling of a tool name or glob written the old way (`fs.read`
/// → `fs_read`, `browser.*` → `browser_*`); `None` when it has no `.`.
pub fn renamed_tool(name: &str) -> Option<String> {
    name.contains('.').then(|| name.replace('.', "_"))
}

/// A rule (`tool` or `tool(specifier)`) with its tool part renamed, when
/// the tool part is spelled the old way; the specifier is left alone.
pub fn renamed_rule(rule: &str) -> Option<String> {
    let rule = rule.trim();
    let end = rule.find('(').unwrap_or(rule.len());
    let (tool, rest) = rule.split_at(end);
    renamed_tool(tool).map(|new| format!("{new}{rest}"))
}

/// A capability (`tool:NAME`) with its tool renamed, when spelled the old
/// way.
pub fn renamed_capability(capability: &str) -> Option<String> {
    let (kind, value) = capability.trim().split_once(':')?;
    (kind.trim() == "tool")
        .then(|| renamed_tool(value.trim()))
        .flatten()
        .map(|new| format!("tool:{new}"))
}

impl PolicyConfig {
    /// Every tool name this configuration spells the old way, each as
    /// "`WHERE`: `OLD` is now `NEW`".
    pub fn renamed_tools(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut rules = |at: &str, r: &RulesConfig| {
            for (list, rules) in [("allow", &r.allow), ("ask", &r.ask), ("deny", &r.deny)] {
                note(
                    &mut found,
                    &format!("{at}rules.{list}"),
                    rules,
                    renamed_rule,
                );
            }
        };
        rules("", &self.rules);
        for (id, agent) in &self.agents {
            rules(&format!("agents.{id}."), &agent.rules);
        }
        for (id, agent) in &self.agents {
            for (list, names) in [("allowed", &agent.allowed), ("denied", &agent.denied)] {
                note(
                    &mut found,
                    &format!("agents.{id}.{list}"),
                    names,
                    renamed_tool,
                );
            }
        }
        found
    }
}

/// Adds a line to `found` for each entry of `list` that `rename` rewrites.
fn note(
    found: &mut Vec<String>,
    at: &str,
    list: &[String],
    rename: impl Fn(&str) -> Option<String>,
) {
    for old in list {
        if let Some(new) = rename(old) {
            found.push(format!("{at}: `{}` is now `{new}`", old.trim()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_names_read_as_new_ones_and_are_reported() {
        assert_eq!(
            renamed_rule("fs.read(/a.b/c.txt)").unwrap(),
            "fs_read(/a.b/c.txt)"
        );
        assert_eq!(renamed_rule("browser.*").unwrap(), "browser_*");
        assert_eq!(renamed_rule("fs_read(/a.b)"), None);
        assert_eq!(
            renamed_capability("tool:fs.write").unwrap(),
            "tool:fs_write"
        );
        assert_eq!(renamed_capability("category:web"), None);
        let config: PolicyConfig = toml::from_str(
            r#"
            rules = { deny = ["fs.delete"] }
            [agents.a]
            level = "standard"
            denied = ["http.*"]
            rules = { allow = ["fs_read", "terminal.exec(git status)"] }
            "#,
        )
        .unwrap();
        assert_eq!(
            config.renamed_tools(),
            [
                "rules.deny: `fs.delete` is now `fs_delete`",
                "agents.a.rules.allow: `terminal.exec(git status)` is now `terminal_exec(git status)`",
                "agents.a.denied: `http.*` is now `http_*`",
            ]
        );
    }
}
