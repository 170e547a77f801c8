use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ActionType, Category, SpecError};

/// A namespaced tool name: `<plugin>_<tool>`, as model APIs accept it.
/// Normalised (trimmed, lower-cased)
/// on parse so `FS_Read ` and `fs_read` are the same tool everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ToolName(String);

impl ToolName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the name is in `namespace` (a plugin's name): `fs_read` is
    /// in `fs`, `my_plugin_run` in `my_plugin`.
    pub fn in_namespace(&self, namespace: &str) -> bool {
        self.0
            .strip_prefix(namespace)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|tool| !tool.is_empty())
    }
}

/// The longest tool name model APIs accept for a function.
pub const MAX_TOOL_NAME: usize = 64;

/// `name` as a tool name: a lower-case letter, then lower-case letters,
/// digits, `_` and `-` (`^[a-z][a-z0-9_-]*$`, a subset of what model APIs
/// accept for function names, `^[a-zA-Z0-9_-]{1,64}$`), with a namespace
/// before its first `_`.
fn valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= MAX_TOOL_NAME
        && matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
        && name
            .split_once('_')
            .is_some_and(|(ns, tool)| !ns.is_empty() && !tool.is_empty())
}

/// The name as tools are named now, when `name` is spelled the old way
/// (`fs.read`, `browser.*`): every `.` becomes `_`. `None` when there is
/// no `.` to replace.
pub fn renamed(name: &str) -> Option<String> {
    name.contains('.').then(|| name.replace('.', "_"))
}

/// " (tools are now named `fs_read`)" for an old-style name, for messages.
pub(crate) fn renamed_hint(name: &str) -> String {
    renamed(name.trim())
        .map(|new| {
            format!(
                "; dotted names were renamed: use `{}`",
                new.to_ascii_lowercase()
            )
        })
        .unwrap_or_default()
}

impl FromStr for ToolName {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let normal = s.trim().to_ascii_lowercase();
        if valid_tool_name(&normal) {
            Ok(ToolName(normal))
        } else {
            Err(SpecError::InvalidToolName(s.to_owned()))
        }
    }
}

impl TryFrom<String> for ToolName {
    type Error = SpecError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ToolName> for String {
    fn from(n: ToolName) -> String {
        n.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A worked example of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Example {
    pub description: String,
    /// The arguments object.
    pub args: Value,
}

/// Everything the host and agents know about one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ToolSpec {
    pub name: ToolName,
    /// One line, shown in tool lists.
    pub summary: String,
    pub description: String,
    pub category: Category,
    pub action_type: ActionType,
    /// JSON Schema of the arguments object.
    pub params_schema: Value,
    /// JSON Schema of the result `data`.
    pub result_schema: Value,
    /// True when a call may change state outside the plugin.
    pub side_effect: bool,
    /// How the policy specifier is rendered from the arguments, e.g. `{path}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specifier_template: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// Ids of on-demand documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
}

impl ToolSpec {
    /// Checks what serde cannot: one-line summary, an object params schema,
    /// a specifier template naming only declared parameters, examples that
    /// are objects, resource ids that are unique and well-formed.
    pub fn check(&self) -> Result<(), SpecError> {
        let problem = |problem: String| SpecError::InvalidSpec {
            tool: self.name.to_string(),
            problem,
        };
        if self.summary.trim().is_empty() || self.summary.contains('\n') {
            return Err(problem("summary must be one non-empty line".into()));
        }
        if self.params_schema.get("type") != Some(&Value::String("object".into())) {
            return Err(problem(
                r#"params schema must have "type": "object""#.into(),
            ));
        }
        if let Some(template) = &self.specifier_template {
            for field in template_fields(template).map_err(problem)? {
                let declared = self
                    .params_schema
                    .get("properties")
                    .and_then(|p| p.get(field))
                    .is_some();
                if !declared {
                    return Err(problem(format!(
                        "specifier template `{template}` names `{field}`, which is not a parameter"
                    )));
                }
            }
        }
        for (i, example) in self.examples.iter().enumerate() {
            if !example.args.is_object() {
                return Err(problem(format!(
                    "example {} args must be a JSON object",
                    i + 1
                )));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for id in &self.resources {
            if id.is_empty()
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(problem(format!(
                    "resource id `{id}` must be [A-Za-z0-9._-]+"
                )));
            }
            if !seen.insert(id) {
                return Err(problem(format!("resource id `{id}` is listed twice")));
            }
        }
        Ok(())
    }

    /// Renders the specifier template with the call's arguments: `{field}`
    /// is replaced by the argument (strings as-is, other values as JSON,
    /// missing ones as empty). `None` when the tool has no template.
    pub fn render_specifier(&self, args: &Value) -> Option<String> {
        self.specifier_template
            .as_deref()
            .map(|t| render_template(t, args))
    }
}

/// Fills a specifier template's `{field}` placeholders from a call's
/// arguments: strings as-is, other values as JSON, missing ones as empty.
/// A template ending in a missing field drops the separator before it
/// (`{app} {args}` without args renders `app`).
pub fn render_template(template: &str, args: &Value) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let before_literal = out.len();
        let literal = &rest[..open];
        out.push_str(literal);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let missing = match args.get(&after[..close]) {
            Some(Value::String(s)) => {
                out.push_str(s);
                false
            }
            Some(Value::Null) | None => true,
            Some(other) => {
                out.push_str(&other.to_string());
                false
            }
        };
        rest = &after[close + 1..];
        if missing && rest.is_empty() && !literal.is_empty() && literal.trim().is_empty() {
            out.truncate(before_literal);
        }
    }
    out.push_str(rest);
    out
}

/// The `{field}` names of a specifier template.
fn template_fields(template: &str) -> Result<Vec<&str>, String> {
    let mut fields = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("specifier template `{template}` has an unclosed `{{`"))?;
        let field = &after[..close];
        if field.is_empty() || !field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "specifier template `{template}` has an invalid field `{field}`"
            ));
        }
        fields.push(field);
        rest = &after[close + 1..];
    }
    Ok(fields)
}

#[cfg(test)]
mod tests;
