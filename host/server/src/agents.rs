//! The agents a host serves: the configured ones, the command line's
//! adjustments to the agent acting, and where their paths resolve.

use warden_gate::PolicyEnv;
use warden_policy::{AgentPolicy, Level, Mode, Policy, RuleSet};

use crate::ServerError;
use crate::config::Config;

/// The command line's adjustments to the agent a command acts as.
#[derive(Debug, Clone, Default)]
pub struct AgentOverrides {
    /// The agent acting.
    pub agent: String,
    pub mode: Option<Mode>,
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

impl AgentOverrides {
    /// Acts as `agent`, changing nothing.
    pub fn acting(agent: &str) -> AgentOverrides {
        AgentOverrides {
            agent: agent.to_owned(),
            ..AgentOverrides::default()
        }
    }
}

/// Every configured agent, plus `builtin` at level standard in default
/// mode when the config does not define it; the overrides apply to the
/// agent acting, which must exist.
pub fn agents(
    config: &Config,
    overrides: &AgentOverrides,
    builtin: &str,
) -> Result<Vec<AgentPolicy>, ServerError> {
    let mut pc = config.policy();
    if !pc.agents.contains_key(builtin) {
        pc.agents.insert(
            builtin.into(),
            warden_policy::config::AgentConfig {
                level: Level::Standard.name().into(),
                mode: Mode::Default,
                allowed: Vec::new(),
                denied: Vec::new(),
                network_allowlist: Vec::new(),
                constraints: Default::default(),
                rules: Default::default(),
                approvals: None,
                principals: Vec::new(),
            },
        );
    }
    let policy =
        Policy::from_config(&pc, &warden_api::BUILTIN_ACTION_TYPES).map_err(ServerError::Policy)?;
    let extra = RuleSet::parse(&overrides.allow, &overrides.ask, &overrides.deny)
        .map_err(ServerError::Rules)?;
    let mut out = Vec::new();
    for p in policy.agents() {
        let mut p = p.clone();
        if p.id == overrides.agent {
            p.add_rules(&extra);
            if let Some(mode) = overrides.mode {
                p.set_mode(mode);
            }
        }
        out.push(p);
    }
    if !out.iter().any(|p| p.id == overrides.agent) {
        return Err(ServerError::UnknownAgent(overrides.agent.clone()));
    }
    Ok(out)
}

/// Where agents' paths resolve: the config's workspace, else
/// `first_grant` (the first directory grant's guest path), else
/// `/workspace`; the project and home as configured.
pub fn env(config: &Config, first_grant: Option<String>) -> PolicyEnv {
    let workspace = config
        .workspace
        .clone()
        .or(first_grant)
        .unwrap_or_else(|| "/workspace".into());
    PolicyEnv {
        project: config.project.clone().unwrap_or_else(|| workspace.clone()),
        home: config
            .home
            .clone()
            .or_else(|| std::env::var("HOME").ok())
            .unwrap_or_else(|| "/root".into()),
        workspace,
    }
}
