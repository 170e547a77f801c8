//! `warden policy check`: what the policy decides for a call that is
//! described, not made — how operators test their rules. Nothing loads or
//! runs; the tool's facts come from the description (or are guessed from
//! its name).

use serde_json::Value;
use warden_policy::{AgentPolicy, Call, Decision, RuleSet, ToolFacts};

use crate::{AgentOverrides, Config, ServerError};

/// A call described for checking.
#[derive(Debug, Clone, Default)]
pub struct DescribedCall {
    pub tool: String,
    /// Default: guessed from the name (`fs_*` is file-system, ...).
    pub category: Option<String>,
    /// Default: from the category and side effect.
    pub action: Option<String>,
    pub side_effect: bool,
    /// The specifier as the policy sees it; or rendered from `args` with
    /// `template` (default `{path}`, `{command}` for terminal tools, `{url}`
    /// for web tools).
    pub specifier: Option<String>,
    pub args: Option<Value>,
    pub template: Option<String>,
}

/// Where the call is checked: a configuration's agents, levels and rules
/// (without one, only the overrides' rules and mode apply, no level
/// gating), the acting agent's overrides, and its directories.
#[derive(Debug, Clone, Default)]
pub struct CheckedAs {
    pub config: Option<Config>,
    pub overrides: AgentOverrides,
    /// The agent added at level standard when the configuration does not
    /// define it (the command line's default agent).
    pub builtin: String,
    pub workspace: Option<String>,
    pub cwd: Option<String>,
}

fn guess_category(tool: &str) -> &'static str {
    match tool.split(['_', '.']).next().unwrap_or_default() {
        "fs" | "file" | "files" => "file-system",
        "terminal" | "shell" => "terminal",
        "http" | "web" | "search" => "web",
        "git" | "vcs" => "version-control",
        "db" => "database",
        "browser" => "browser",
        "desktop" => "desktop",
        "code" => "code-execution",
        "deploy" => "deployment",
        _ => "memory",
    }
}

fn default_action(category: &str, side_effect: bool) -> &'static str {
    match (category, side_effect) {
        ("file-system" | "terminal" | "code-execution", false) => "code:read",
        ("file-system" | "terminal", true) => "code:write",
        ("code-execution", true) => "test:run",
        ("web" | "external-data", _) => "external_data:request",
        ("version-control", false) => "vcs:read",
        ("version-control", true) => "vcs:commit",
        ("database", false) => "db:query",
        ("database", true) => "db:mutate",
        ("deployment", _) => "deploy:staging",
        ("browser", _) => "browser:navigate",
        ("desktop", _) => "desktop:launch",
        _ => "memory:read",
    }
}

/// The decision for `call` made `as_`.
pub fn check(call: &DescribedCall, as_: &CheckedAs) -> Result<Decision, ServerError> {
    let category = call
        .category
        .clone()
        .unwrap_or_else(|| guess_category(&call.tool).to_owned());
    let action = call
        .action
        .clone()
        .unwrap_or_else(|| default_action(&category, call.side_effect).to_owned());
    let specifier = match (&call.specifier, &call.args) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(v)) => {
            let template = call
                .template
                .clone()
                .unwrap_or_else(|| match category.as_str() {
                    "terminal" => "{command}".into(),
                    "web" => "{url}".into(),
                    _ => "{path}".into(),
                });
            Some(warden_api::render_template(&template, v))
        }
        (None, None) => None,
    };
    let overrides = &as_.overrides;
    let default = Config::default();
    let config = as_.config.as_ref().unwrap_or(&default);
    let mut agent: AgentPolicy = match &as_.config {
        Some(config) => crate::agents(config, overrides, &as_.builtin)?
            .into_iter()
            .find(|a| a.id == overrides.agent)
            .ok_or_else(|| ServerError::UnknownAgent(overrides.agent.clone()))?,
        None => {
            let rules = RuleSet::parse(&overrides.allow, &overrides.ask, &overrides.deny)
                .map_err(ServerError::Rules)?;
            AgentPolicy::rules_only(&overrides.agent, overrides.mode.unwrap_or_default(), rules)
        }
    };
    // As in a running host: a deny rule on a file tool denies its path to
    // every tool (tool names are read as the category guess reads them).
    agent.deny_file_paths(|pattern| guess_category(pattern) == "file-system");
    let mut env = crate::agents::env(config, None);
    if let Some(w) = &as_.workspace {
        env.workspace = w.clone();
        env.project = config.project.clone().unwrap_or_else(|| w.clone());
    }
    let mut e = env.env();
    if let Some(cwd) = &as_.cwd {
        e.cwd = cwd;
    }
    let described = Call {
        tool: ToolFacts {
            name: &call.tool,
            category: &category,
            action_type: &action,
            side_effect: call.side_effect,
            isolation: warden_policy::Isolation::Wasm,
            // A sandboxed git tool declares what the call does, as it would
            // when served (`force` in the args makes a push a force push).
            vcs: warden_sandbox::git_operation(
                &call.tool,
                call.args.as_ref().unwrap_or(&Value::Null),
                &config
                    .sandbox
                    .as_ref()
                    .map(|s| s.git.clone())
                    .unwrap_or_default(),
            )
            .map(warden_gate::vcs_op),
        },
        specifier: specifier.as_deref(),
        resolved_path: None,
        remote_host: None,
        principal: None,
    };
    Ok(agent.decide(&described, &e))
}
