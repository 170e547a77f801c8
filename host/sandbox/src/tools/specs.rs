//! The specs of the sandboxed tools: the same fields a plugin declares
//! (category, action type, params schema, side effect, specifier template,
//! examples), so the gate and policy treat them like any other tool.

use serde_json::{Value, json};
use warden_api::{ActionType, Category, Example, SpecError, ToolName, ToolSpec};

pub(super) struct Def {
    pub(super) name: &'static str,
    pub(super) summary: &'static str,
    pub(super) description: &'static str,
    pub(super) category: Category,
    pub(super) action: &'static str,
    pub(super) params: Value,
    pub(super) result: Value,
    pub(super) side_effect: bool,
    pub(super) specifier: Option<&'static str>,
    pub(super) example: Value,
}

pub(super) fn build(d: Def) -> Result<ToolSpec, SpecError> {
    let spec = ToolSpec {
        name: d.name.parse::<ToolName>()?,
        summary: d.summary.into(),
        description: d.description.into(),
        category: d.category,
        action_type: d.action.parse::<ActionType>()?,
        params_schema: d.params,
        result_schema: d.result,
        side_effect: d.side_effect,
        specifier_template: d.specifier.map(Into::into),
        examples: vec![Example {
            description: format!("a typical `{}` call", d.name),
            args: d.example,
        }],
        resources: Vec::new(),
    };
    spec.check()?;
    Ok(spec)
}

pub(super) fn object(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

pub(super) fn timeout() -> Value {
    json!({"type": "integer", "minimum": 1, "description": "seconds; the configured default when absent, capped by the configured maximum"})
}

fn rel_path(what: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 512, "description": format!("{what}, relative to the workspace")})
}

fn run_result() -> Value {
    json!({"type": "object", "properties": {
        "exit_code": {"type": ["integer", "null"]}, "stdout": {"type": "string"},
        "stderr": {"type": "string"}, "truncated": {"type": "boolean"},
        "duration_ms": {"type": "integer"}, "strategy": {"type": "string"}
    }})
}

fn shot_result() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string"}, "sha256": {"type": "string"}, "bytes": {"type": "integer"}
    }})
}

/// Every sandboxed tool.
pub fn all() -> Result<Vec<ToolSpec>, SpecError> {
    let desktop = |name, summary, action, params: Value, required: &[&str], spec, example| Def {
        name,
        summary,
        description: "Acts on the desktop session started by desktop_launch in the agent's \
                      warm container. Fails with app_not_running when the session is gone \
                      (the container was reset, the program exited).",
        category: Category::Desktop,
        action,
        params: object(params, required),
        result: json!({"type": "object"}),
        side_effect: true,
        specifier: spec,
        example,
    };
    let defs = vec![
        Def {
            name: "terminal_exec",
            summary: "Run a shell command line in the agent's sandbox container",
            description: "Runs `command` with bash (no startup files) in a Docker container: no network unless \
                          granted, the workspace read-only unless granted read-write, a non-root \
                          user without capabilities, memory, CPU and process limits. A timeout \
                          kills every process the command started.",
            category: Category::Terminal,
            action: "code:write",
            params: object(
                json!({
                    "command": {"type": "string", "minLength": 1, "maxLength": 65536},
                    "cwd": {"type": "string", "description": "absolute directory inside the container (default: the workspace)"},
                    "timeout_secs": timeout()
                }),
                &["command"],
            ),
            result: run_result(),
            side_effect: true,
            specifier: Some("{command}"),
            example: json!({"command": "git status --short", "timeout_secs": 30}),
        },
        Def {
            name: "code_run",
            summary: "Run a Python 3 or sh program in a sandbox container",
            description: "Runs `source` with the interpreter of `language` in the same kind of \
                          container as terminal_exec.",
            category: Category::CodeExecution,
            action: "code:write",
            params: object(
                json!({
                    "language": {"type": "string", "enum": ["python3", "sh"]},
                    "source": {"type": "string", "minLength": 1, "maxLength": 1_048_576},
                    "timeout_secs": timeout()
                }),
                &["language", "source"],
            ),
            result: run_result(),
            side_effect: true,
            // The decision reads the code itself: sh code as a command
            // line (rules, breakers, the read-only set), other code as
            // opaque text only an exact rule allows.
            specifier: Some("{language}: {source}"),
            example: json!({"language": "python3", "source": "print(6 * 7)"}),
        },
        Def {
            name: "browser_navigate",
            summary: "Load a page in headless chromium and return its rendered DOM",
            description: "Loads `url` (file:// inside the workspace, or http(s) to a granted \
                          host) and returns the title and the DOM after scripts ran.",
            category: Category::Browser,
            action: "browser:navigate",
            params: object(
                json!({"url": {"type": "string", "minLength": 1}, "timeout_secs": timeout()}),
                &["url"],
            ),
            result: json!({"type": "object", "properties": {"title": {"type": "string"}, "dom": {"type": "string"}}}),
            side_effect: false,
            specifier: Some("{url}"),
            example: json!({"url": "file:///workspace/index.html"}),
        },
        Def {
            name: "browser_screenshot",
            summary: "Screenshot a page into a PNG in the workspace",
            description: "Renders `url` at width x height and writes the PNG to `path` in the \
                          workspace (needs a read-write workspace grant); returns its sha256.",
            category: Category::Browser,
            action: "browser:screenshot",
            params: object(
                json!({
                    "url": {"type": "string", "minLength": 1}, "path": rel_path("where the PNG goes"),
                    "width": {"type": "integer", "minimum": 16, "maximum": 4096},
                    "height": {"type": "integer", "minimum": 16, "maximum": 4096},
                    "timeout_secs": timeout()
                }),
                &["url", "path"],
            ),
            result: shot_result(),
            side_effect: true,
            specifier: Some("{url}"),
            example: json!({"url": "file:///workspace/index.html", "path": "shots/index.png", "width": 800, "height": 600}),
        },
        Def {
            name: "browser_diff",
            summary: "Compare two screenshots: SSIM and a diff image",
            description: "Computes the structural similarity (SSIM, 1.0 = identical) of two PNGs \
                          of the same size in the workspace and writes an image with the changed \
                          pixels in red to `diff_path`.",
            category: Category::Browser,
            action: "browser:diff",
            params: object(
                json!({"before": rel_path("the first PNG"), "after": rel_path("the second PNG"), "diff_path": rel_path("where the diff PNG goes")}),
                &["before", "after", "diff_path"],
            ),
            result: json!({"type": "object", "properties": {"ssim": {"type": "number"}, "changed_pixels": {"type": "integer"}}}),
            side_effect: true,
            specifier: Some("{before}"),
            example: json!({"before": "shots/a.png", "after": "shots/b.png", "diff_path": "shots/a-b.png"}),
        },
        Def {
            name: "browser_accessibility_scan",
            summary: "Accessibility findings for a page, as structured JSON",
            description: "Renders `url` and checks the DOM: document title and language, image \
                          alt text, form labels, link and button names, heading order.",
            category: Category::Browser,
            action: "browser:accessibility_scan",
            params: object(
                json!({"url": {"type": "string", "minLength": 1}, "timeout_secs": timeout()}),
                &["url"],
            ),
            result: json!({"type": "object", "properties": {"findings": {"type": "array"}}}),
            side_effect: false,
            specifier: Some("{url}"),
            example: json!({"url": "file:///workspace/index.html"}),
        },
        Def {
            name: "desktop_launch",
            summary: "Start a virtual desktop and a GUI program in it",
            description: "Starts Xvfb (once) and `app` with `args` in the agent's warm desktop \
                          container, and waits for its window. Later desktop calls act on it.",
            category: Category::Desktop,
            action: "desktop:launch",
            params: object(
                json!({
                    "app": {"type": "string", "minLength": 1, "maxLength": 256},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "timeout_secs": timeout()
                }),
                &["app"],
            ),
            result: json!({"type": "object", "properties": {"window": {"type": "string"}}}),
            side_effect: true,
            // Arguments change what runs: they are part of the decision.
            specifier: Some("{app} {args}"),
            example: json!({"app": "warden-notepad"}),
        },
        desktop(
            "desktop_click",
            "Click at a point of the virtual desktop",
            "desktop:click",
            json!({"x": {"type": "integer", "minimum": 0}, "y": {"type": "integer", "minimum": 0}, "button": {"type": "integer", "enum": [1, 2, 3]}}),
            &["x", "y"],
            None,
            json!({"x": 100, "y": 50}),
        ),
        desktop(
            "desktop_type",
            "Type text into the focused window",
            "desktop:type",
            json!({"text": {"type": "string", "minLength": 1, "maxLength": 4096}}),
            &["text"],
            Some("{text}"),
            json!({"text": "hello"}),
        ),
        desktop(
            "desktop_key",
            "Press keys (xdotool names, e.g. ctrl+s Return)",
            "desktop:key",
            json!({"keys": {"type": "string", "minLength": 1, "maxLength": 256, "pattern": "^[A-Za-z0-9_+ ]+$"}}),
            &["keys"],
            Some("{keys}"),
            json!({"keys": "ctrl+a BackSpace"}),
        ),
        desktop(
            "desktop_scroll",
            "Scroll the window under the pointer",
            "desktop:scroll",
            json!({"direction": {"type": "string", "enum": ["up", "down"]}, "amount": {"type": "integer", "minimum": 1, "maximum": 50}}),
            &["direction"],
            None,
            json!({"direction": "down", "amount": 3}),
        ),
        desktop(
            "desktop_screenshot",
            "Capture the virtual desktop into a PNG in the workspace",
            "desktop:screenshot",
            json!({"path": rel_path("where the PNG goes")}),
            &["path"],
            Some("{path}"),
            json!({"path": "shots/desktop.png"}),
        ),
    ];
    defs.into_iter()
        .chain(super::git::specs::defs())
        .map(build)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use warden_api::Category;

    #[test]
    fn every_spec_is_valid_and_the_command_is_the_terminal_specifier() {
        let specs = super::all().unwrap();
        assert_eq!(specs.len(), 23);
        let terminal = specs
            .iter()
            .find(|s| s.name.as_str() == "terminal_exec")
            .unwrap();
        assert_eq!(terminal.category, Category::Terminal);
        assert_eq!(
            terminal
                .render_specifier(&json!({"command": "ls -la && rm x"}))
                .as_deref(),
            Some("ls -la && rm x")
        );
        assert!(specs.iter().all(|s| !s.examples.is_empty()));
        for (prefix, category) in [
            ("browser_", Category::Browser),
            ("desktop_", Category::Desktop),
            ("code_", Category::CodeExecution),
            ("git_", Category::VersionControl),
        ] {
            assert!(
                specs
                    .iter()
                    .filter(|s| s.name.as_str().starts_with(prefix))
                    .all(|s| s.category == category)
            );
        }
    }
}
