//! `warden policy check`: what the policy decides for a call, as JSON —
//! how operators test their rules. Pure: no plugin is loaded unless the
//! tool's facts must come from one; nothing runs.

use clap::Args;
use serde_json::{Value, json};
use warden_policy::{AgentPolicy, Call, RuleSet, ToolFacts};

use super::setup::{self, AgentArgs};
use crate::Outcome;
use warden_server::Config;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The tool, e.g. `terminal.exec`.
    #[arg(long)]
    pub tool: String,
    /// The call's arguments (JSON); the specifier is rendered from them
    /// with --template.
    #[arg(long, value_name = "JSON", conflicts_with = "specifier")]
    pub args: Option<String>,
    /// The specifier as the policy sees it, e.g. `npm run build`.
    #[arg(long, value_name = "STR")]
    pub specifier: Option<String>,
    /// The tool's specifier template, for --args (default `{path}` for
    /// file-system tools, `{command}` for terminal tools).
    #[arg(long, value_name = "TEMPLATE")]
    pub template: Option<String>,
    /// The tool's category (default: guessed from the name: fs.* is
    /// file-system, terminal.* terminal, ...).
    #[arg(long)]
    pub category: Option<String>,
    /// The tool's action type (default from the category).
    #[arg(long)]
    pub action: Option<String>,
    /// The tool has side effects.
    #[arg(long)]
    pub side_effect: bool,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// A warden.toml whose agents, levels and rules apply. Without it only
    /// the rules and mode given here apply: no level gating.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The workspace root, as the agent's paths name it.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// The directory relative paths resolve against (default: the workspace).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Print JSON (the default; kept for scripts that pass it).
    #[arg(long)]
    pub json: bool,
}

fn guess_category(tool: &str) -> &'static str {
    match tool.split('.').next().unwrap_or_default() {
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

pub fn check(args: CheckArgs) -> anyhow::Result<Outcome> {
    let category = args
        .category
        .clone()
        .unwrap_or_else(|| guess_category(&args.tool).to_owned());
    let action = args
        .action
        .clone()
        .unwrap_or_else(|| default_action(&category, args.side_effect).to_owned());
    let specifier = match (&args.specifier, &args.args) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(json)) => {
            let v: Value = serde_json::from_str(json)
                .map_err(|e| anyhow::anyhow!("--args is not valid JSON: {e}"))?;
            let template = args
                .template
                .clone()
                .unwrap_or_else(|| match category.as_str() {
                    "terminal" => "{command}".into(),
                    "web" => "{url}".into(),
                    _ => "{path}".into(),
                });
            Some(warden_api::render_template(&template, &v))
        }
        (None, None) => None,
    };
    let mut agent: AgentPolicy = match &args.config {
        Some(path) => {
            let config = Config::load(path)?;
            let mut agents =
                warden_server::agents(&config, &args.agent.overrides(), setup::DEFAULT_AGENT)?;
            let i = agents
                .iter()
                .position(|a| a.id == args.agent.agent)
                .ok_or_else(|| anyhow::anyhow!("agent `{}` is not configured", args.agent.agent))?;
            agents.swap_remove(i)
        }
        None => {
            let rules = RuleSet::parse(&args.agent.allow, &args.agent.ask, &args.agent.deny)?;
            AgentPolicy::rules_only(
                &args.agent.agent,
                args.agent.mode.unwrap_or_default(),
                rules,
            )
        }
    };
    // As in a running host: a deny rule on a file tool denies its path to
    // every tool (tool names are read as --category guesses them).
    agent.deny_file_paths(|pattern| guess_category(pattern) == "file-system");
    let config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let mut env = warden_server::env(&config, None);
    if let Some(w) = &args.workspace {
        env.workspace = w.clone();
        env.project = config.project.clone().unwrap_or_else(|| w.clone());
    }
    let mut e = env.env();
    if let Some(cwd) = &args.cwd {
        e.cwd = cwd;
    }
    let call = Call {
        tool: ToolFacts {
            name: &args.tool,
            category: &category,
            action_type: &action,
            side_effect: args.side_effect,
            isolation: warden_policy::Isolation::Wasm,
        },
        specifier: specifier.as_deref(),
        resolved_path: None,
    };
    let d = agent.decide(&call, &e);
    #[expect(clippy::print_stdout, reason = "the decision is this command's output")]
    {
        println!(
            "{}",
            json!({"decision": d.decision, "reason": d.reason, "rule": d.rule, "layer": d.layer})
        );
    }
    Ok(Outcome::Ok)
}
