//! The tool table: the definitions `tools/list` returns, and its pages in
//! each list mode.

use std::str::FromStr;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// Tools per `tools/list` page.
pub const PAGE: usize = 50;

/// Filler tools the `many` list mode adds.
const MANY: usize = 300;

/// How `tools/list` answers (`--list-mode`); calls are not affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListMode {
    /// All tools, 50 a page.
    Normal,
    /// Page `k` holds one tool `t<k>` and the cursor of page `k + 1`, forever.
    Endless,
    /// `echo` appears twice.
    Duplicate,
    /// 300 more tools `many_0..many_299`, 50 a page.
    Many,
    /// `echo`'s input schema carries a 100 KiB description.
    HugeSchema,
}

impl FromStr for ListMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "normal" => Self::Normal,
            "endless" => Self::Endless,
            "duplicate" => Self::Duplicate,
            "many" => Self::Many,
            "huge-schema" => Self::HugeSchema,
            other => {
                return Err(format!(
                    "unknown list mode {other:?} (normal|endless|duplicate|many|huge-schema)"
                ));
            }
        })
    }
}

/// What changes at run time: `rename_desc` and `mutate_list`.
#[derive(Debug, Clone)]
pub struct Dynamic {
    pub echo_description: String,
    /// How many `extra_N` tools `mutate_list` has added.
    pub extras: u32,
}

impl Default for Dynamic {
    fn default() -> Self {
        Self {
            echo_description: "Returns its text argument.".to_owned(),
            extras: 0,
        }
    }
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// An object schema with `properties` and `required`.
fn schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    object(json!({"type": "object", "properties": properties, "required": required}))
}

fn no_args() -> Arc<JsonObject> {
    object(json!({"type": "object", "properties": {}}))
}

fn simple(name: impl Into<String>, description: &'static str) -> Tool {
    Tool::new(name.into(), description, no_args())
}

fn doubled_schema() -> Arc<JsonObject> {
    schema(
        json!({"n": {"type": "integer"}, "doubled": {"type": "integer"}}),
        &["n", "doubled"],
    )
}

fn echo(description: &str, huge_schema: bool) -> Tool {
    let mut text = json!({"type": "string"});
    if huge_schema {
        text["description"] = Value::String("d".repeat(100 * 1024));
    }
    Tool::new(
        "echo",
        description.to_owned(),
        schema(json!({"text": text}), &["text"]),
    )
    .with_annotations(ToolAnnotations::new().read_only(true))
}

/// Every tool the fixture serves now, in listing order (before the list
/// mode's additions).
pub fn base(dynamic: &Dynamic, huge_schema: bool) -> Vec<Tool> {
    let integer = |name: &str| schema(json!({name: {"type": "integer"}}), &[name]);
    let string = |name: &str| schema(json!({name: {"type": "string"}}), &[name]);
    let mut tools = vec![
        echo(&dynamic.echo_description, huge_schema),
        simple("image", "Returns a small PNG image."),
        simple("audio", "Returns a short WAV clip."),
        simple(
            "resource",
            "Returns an embedded text and an embedded blob resource.",
        ),
        simple("link", "Returns a resource link."),
        Tool::new(
            "structured",
            "Returns n and 2n as structured content.",
            integer("n"),
        )
        .with_raw_output_schema(doubled_schema()),
        simple(
            "structured_only",
            "Returns structured content and no content blocks.",
        )
        .with_raw_output_schema(doubled_schema()),
        simple(
            "structured_error",
            "Fails with text and structured content.",
        ),
        simple("null_structured", "Returns structuredContent null."),
        simple(
            "bad_output",
            "Returns output that violates its output schema.",
        )
        .with_raw_output_schema(integer("n")),
        Tool::new(
            "slow",
            "Sleeps ms milliseconds, then answers.",
            integer("ms"),
        ),
        simple("crash", "Exits the process (status 3) without answering."),
        simple(
            "mutate_list",
            "Adds a tool extra_N and sends tools/list_changed.",
        ),
        Tool::new(
            "rename_desc",
            "Sets echo's description and sends tools/list_changed.",
            string("description"),
        ),
        simple("notify_noop", "Sends tools/list_changed without a change."),
        Tool::new(
            "huge",
            "Returns one text block of `bytes` x's.",
            integer("bytes"),
        ),
        simple(
            "env_keys",
            "Returns the sorted names of the process environment.",
        ),
        Tool::new(
            "echo_secret",
            "Returns (and writes to stderr) the value of an environment variable.",
            string("name"),
        ),
        simple("counter", "Counts calls in this session.")
            .with_raw_output_schema(schema(json!({"count": {"type": "integer"}}), &["count"])),
        Tool::new(
            "stderr_flood",
            "Writes `bytes` bytes to stderr, then answers.",
            integer("bytes"),
        ),
        simple(
            "spawn_grandchild",
            "Spawns `sleep 1000` and returns its pid.",
        ),
        simple("pid", "Returns the process id."),
        simple("progress", "Reports three steps of progress, then returns."),
        simple(
            "ask",
            "Asks the person behind the client for a colour (elicitation).",
        ),
    ];
    tools.extend(
        (1..=dynamic.extras).map(|n| simple(format!("extra_{n}"), "Added by mutate_list.")),
    );
    tools
}

/// `page-<k>` -> `k`; no cursor is page 0.
fn page_number(cursor: Option<&str>) -> Result<usize, String> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .strip_prefix("page-")
            .and_then(|k| k.parse().ok())
            .ok_or_else(|| format!("invalid cursor {c:?}")),
    }
}

fn cursor(k: usize) -> String {
    format!("page-{k}")
}

/// One page of `tools/list`: its tools and the next cursor.
pub fn page(
    mode: ListMode,
    dynamic: &Dynamic,
    cursor_in: Option<&str>,
) -> Result<(Vec<Tool>, Option<String>), String> {
    let k = page_number(cursor_in)?;
    if mode == ListMode::Endless {
        let tool = simple(format!("t{k}"), "A tool of an endless listing.");
        return Ok((vec![tool], Some(cursor(k + 1))));
    }
    let mut all = base(dynamic, mode == ListMode::HugeSchema);
    match mode {
        ListMode::Duplicate => all.push(echo(&dynamic.echo_description, false)),
        ListMode::Many => {
            all.extend((0..MANY).map(|i| simple(format!("many_{i}"), "A filler tool.")));
        }
        _ => {}
    }
    let start = k * PAGE;
    if start >= all.len() && k > 0 {
        return Err(format!("invalid cursor {:?}", cursor(k)));
    }
    let end = (start + PAGE).min(all.len());
    let next = (end < all.len()).then(|| cursor(k + 1));
    Ok((all.drain(start..end).collect(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[Tool]) -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    }

    #[test]
    fn normal_is_one_page() -> Result<(), String> {
        let (tools, next) = page(ListMode::Normal, &Dynamic::default(), None)?;
        assert_eq!(next, None);
        assert_eq!(tools.len(), 24);
        assert_eq!(names(&tools)[0], "echo");
        Ok(())
    }

    #[test]
    fn many_pages_fifty_at_a_time() -> Result<(), String> {
        let dynamic = Dynamic::default();
        let mut cursor = None;
        let mut all = Vec::new();
        let mut pages = 0;
        loop {
            let (tools, next) = page(ListMode::Many, &dynamic, cursor.as_deref())?;
            assert!(tools.len() <= PAGE);
            all.extend(names(&tools));
            pages += 1;
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(all.len(), 324);
        assert_eq!(pages, 7);
        assert_eq!(all.last().map(String::as_str), Some("many_299"));
        Ok(())
    }

    #[test]
    fn endless_never_ends() -> Result<(), String> {
        let (tools, next) = page(ListMode::Endless, &Dynamic::default(), Some("page-41"))?;
        assert_eq!(names(&tools), ["t41"]);
        assert_eq!(next.as_deref(), Some("page-42"));
        Ok(())
    }

    #[test]
    fn duplicate_lists_echo_twice() -> Result<(), String> {
        let (tools, _) = page(ListMode::Duplicate, &Dynamic::default(), None)?;
        let echoes = tools.iter().filter(|t| t.name == "echo").count();
        assert_eq!(echoes, 2);
        Ok(())
    }

    #[test]
    fn huge_schema_is_over_100_kib() -> Result<(), String> {
        let (tools, _) = page(ListMode::HugeSchema, &Dynamic::default(), None)?;
        let echo = serde_json::to_string(&tools[0].input_schema).map_err(|e| e.to_string())?;
        assert!(echo.len() > 100 * 1024);
        Ok(())
    }

    #[test]
    fn bad_cursors_are_refused() {
        let dynamic = Dynamic::default();
        assert!(page(ListMode::Normal, &dynamic, Some("nope")).is_err());
        assert!(page(ListMode::Normal, &dynamic, Some("page-9")).is_err());
    }
}
