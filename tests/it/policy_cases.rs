//! Table-driven policy cases: every file in `tests/cases/*.toml` holds
//! `[[case]]` entries — a policy, a call, and the expected decision — run
//! against the real engine. A case can fail on the verdict, the layer, the
//! rule cited, or a word missing from the reason.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use warden_policy::config::PolicyConfig;
use warden_policy::{AgentPolicy, Call, Env, Mode, Policy, RuleSet, ToolFacts};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Case {
    name: String,
    tool: String,
    category: Option<String>,
    action: Option<String>,
    side_effect: Option<bool>,
    /// Where the tool runs (`host`, `wasm`, `container`); default wasm.
    #[serde(default = "wasm")]
    isolation: warden_policy::Isolation,
    specifier: Option<String>,
    resolved_path: Option<String>,
    /// The host a version-control call reaches, as its backend resolved
    /// it (a fetch or push: the remote's URL).
    remote_host: Option<String>,
    /// A version-control call's operation (`push`, `force-push`, ...);
    /// default: the tool's, for the git tools below.
    vcs: Option<warden_policy::VcsOp>,
    /// Without `config`: the rules and mode that apply.
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    mode: Option<Mode>,
    /// A whole policy configuration, and the agent the call is made as.
    config: Option<PolicyConfig>,
    agent: Option<String>,
    workspace: Option<String>,
    project: Option<String>,
    cwd: Option<String>,
    /// The signed-in principal behind the call (OAuth).
    principal: Option<CasePrincipal>,
    expect: String,
    layer: Option<String>,
    rule: Option<String>,
    reason_contains: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct CasePrincipal {
    subject: String,
    client_id: Option<String>,
    #[serde(default)]
    claims: BTreeMap<String, String>,
}

fn wasm() -> warden_policy::Isolation {
    warden_policy::Isolation::Wasm
}

#[derive(Debug, Deserialize)]
struct File {
    case: Vec<Case>,
}

/// Defaults for the tools the cases use most.
fn tool_defaults(tool: &str) -> Option<(&'static str, &'static str, bool)> {
    Some(match tool {
        "fs_read" | "fs_list" => ("file-system", "code:read", false),
        "fs_write" | "fs_edit" => ("file-system", "code:write", true),
        "fs_delete" => ("file-system", "code:delete", true),
        "terminal_exec" => ("terminal", "code:write", true),
        "http_fetch" => ("web", "external_data:request", false),
        "git_push" => ("version-control", "vcs:push", true),
        "git_commit" => ("version-control", "vcs:commit", true),
        "git_status" | "git_log" => ("version-control", "vcs:read", false),
        "git_clone" | "git_fetch" => ("version-control", "vcs:read", true),
        "git_branch" => ("version-control", "vcs:branch", true),
        "git_restore" | "git_reset" => ("version-control", "vcs:commit", true),
        "db_query" => ("database", "db:query", false),
        "db_migrate" => ("database", "db:mutate", true),
        "deploy_prod" => ("deployment", "deploy:production", true),
        "code_run" => ("code-execution", "test:run", true),
        _ => return None,
    })
}

/// The operation each git tool declares (a push with `force` declares
/// `force-push` per call; a case says so with `vcs`).
fn vcs_default(tool: &str) -> Option<warden_policy::VcsOp> {
    use warden_policy::VcsOp;
    Some(match tool {
        "git_status" | "git_log" => VcsOp::Read,
        "git_clone" | "git_fetch" => VcsOp::Fetch,
        "git_branch" => VcsOp::Branch,
        "git_commit" => VcsOp::Commit,
        "git_restore" | "git_reset" => VcsOp::Discard,
        "git_push" => VcsOp::Push,
        _ => return None,
    })
}

fn run(case: &Case) -> Result<(), String> {
    let defaults = tool_defaults(&case.tool);
    let category = case
        .category
        .clone()
        .or(defaults.map(|d| d.0.to_owned()))
        .ok_or("no category")?;
    let action = case
        .action
        .clone()
        .or(defaults.map(|d| d.1.to_owned()))
        .ok_or("no action")?;
    let side_effect = case
        .side_effect
        .or(defaults.map(|d| d.2))
        .ok_or("no side-effect")?;
    let policy_holder;
    let agent: AgentPolicy = match &case.config {
        Some(config) => {
            policy_holder = Policy::from_config(config, &warden_api::BUILTIN_ACTION_TYPES)
                .map_err(|e| format!("config: {e}"))?;
            let id = case
                .agent
                .as_deref()
                .ok_or("a case with config names its agent")?;
            policy_holder.agent(id).ok_or("unknown agent")?.clone()
        }
        None => {
            let rules =
                RuleSet::parse(&case.allow, &case.ask, &case.deny).map_err(|e| e.to_string())?;
            AgentPolicy::rules_only("test", case.mode.unwrap_or_default(), rules)
        }
    };
    let mut agent = agent;
    if let (Some(mode), Some(_)) = (case.mode, &case.config) {
        agent.set_mode(mode);
    }
    // As the gate does with its tool table: a deny rule on a file tool
    // (every `fs_*` tool here is one) denies its path to every tool.
    agent.deny_file_paths(|pattern| pattern.starts_with("fs_"));
    let workspace = case.workspace.as_deref().unwrap_or("/work/proj");
    let env = Env {
        workspace,
        project: case.project.as_deref().unwrap_or(workspace),
        cwd: case.cwd.as_deref().unwrap_or(workspace),
        home: "/home/agent",
    };
    let call = Call {
        tool: ToolFacts {
            name: &case.tool,
            category: &category,
            action_type: &action,
            side_effect,
            isolation: case.isolation,
            vcs: case.vcs.or_else(|| vcs_default(&case.tool)),
        },
        specifier: case.specifier.as_deref(),
        resolved_path: case.resolved_path.as_deref(),
        remote_host: case.remote_host.as_deref(),
        principal: case
            .principal
            .as_ref()
            .map(|p| warden_policy::PrincipalFacts {
                subject: &p.subject,
                client_id: p.client_id.as_deref(),
                claims: &p.claims,
            }),
    };
    let d = agent.decide(&call, &env);
    let json = serde_json::to_value(&d).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    if json["decision"] != case.expect.as_str() {
        problems.push(format!(
            "decision {} (expected {})",
            json["decision"], case.expect
        ));
    }
    if let Some(layer) = &case.layer
        && json["layer"] != layer.as_str()
    {
        problems.push(format!("layer {} (expected {layer})", json["layer"]));
    }
    if let Some(rule) = &case.rule
        && d.rule.as_deref() != Some(rule.as_str())
    {
        problems.push(format!("rule {:?} (expected {rule:?})", d.rule));
    }
    if let Some(word) = &case.reason_contains
        && !d.reason.contains(word.as_str())
    {
        problems.push(format!("reason lacks {word:?}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}; reason: {}", problems.join(", "), d.reason))
    }
}

fn load_cases() -> BTreeMap<String, Vec<Case>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let file: File =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            files.insert(
                path.file_name().unwrap().to_string_lossy().into_owned(),
                file.case,
            );
        }
    }
    files
}

#[test]
fn policy_cases() {
    let files = load_cases();
    let mut failures = Vec::new();
    let mut count = 0;
    for (file, cases) in &files {
        for case in cases {
            count += 1;
            if let Err(e) = run(case) {
                failures.push(format!("{file}: {}: {e}", case.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        count >= 150,
        "only {count} policy cases; the suite keeps at least 150"
    );
}

#[test]
fn every_category_is_mapped_to_levels() {
    let mapped: Vec<&str> = warden_policy::known_categories().collect();
    for c in warden_api::Category::ALL {
        assert!(
            mapped.contains(&c.as_str()),
            "category `{c}` has no row in the level table"
        );
    }
    assert_eq!(
        mapped.len(),
        warden_api::Category::ALL.len(),
        "the level table names a category the contract lacks"
    );
}

#[test]
fn the_taxonomy_is_the_contracts() {
    let types = warden_policy::ActionTypes::new(&warden_api::BUILTIN_ACTION_TYPES, &[]).unwrap();
    assert!(types.is_known("code:read"));
    assert!(types.selector("code").is_ok());
    assert!(types.selector("code:explode").is_err());
    assert!(types.selector("nonsense").is_err());
    let code = types.selector("code").unwrap();
    assert_eq!(
        types.expand(&code),
        [
            "code:create",
            "code:delete",
            "code:read",
            "code:refactor",
            "code:write"
        ]
    );
    let custom = warden_policy::ActionTypes::new(
        &warden_api::BUILTIN_ACTION_TYPES,
        &["rocket:launch".into()],
    )
    .unwrap();
    assert!(custom.selector("rocket").is_ok());
    assert!(
        warden_policy::ActionTypes::new(&warden_api::BUILTIN_ACTION_TYPES, &["code:read".into()])
            .is_err()
    );
}
