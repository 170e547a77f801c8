//! The agents the gate knows: each one's compiled policy, the place its
//! paths resolve against, and the rules people added by answering
//! "always allow".

use std::collections::BTreeMap;
use std::sync::RwLock;

use warden_policy::{AgentPolicy, Decision, Env, RuleSet};

use crate::GateError;

/// Where agents work, in the namespace their paths use (guest paths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyEnv {
    pub workspace: String,
    /// The project directory; the workspace unless configured.
    pub project: String,
    pub home: String,
}

impl PolicyEnv {
    pub fn env(&self) -> Env<'_> {
        Env {
            workspace: &self.workspace,
            project: &self.project,
            cwd: &self.workspace,
            home: &self.home,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Agents {
    policies: RwLock<BTreeMap<String, AgentPolicy>>,
    pub env: PolicyEnv,
}

impl Agents {
    pub fn new(policies: impl IntoIterator<Item = AgentPolicy>, env: PolicyEnv) -> Agents {
        Agents {
            policies: RwLock::new(policies.into_iter().map(|p| (p.id.clone(), p)).collect()),
            env,
        }
    }

    /// Runs `f` on an agent's policy; `None` for an unknown agent.
    pub fn with<T>(&self, agent: &str, f: impl FnOnce(&AgentPolicy) -> T) -> Option<T> {
        let map = self
            .policies
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(agent).map(f)
    }

    /// Adds an allow rule a person approved with "always allow".
    pub fn add_allow_rule(&self, agent: &str, rule: &str) -> Result<(), GateError> {
        let rules = RuleSet::parse(&[rule.to_owned()], &[], &[]).map_err(|source| {
            GateError::InvalidRule {
                rule: rule.to_owned(),
                source,
            }
        })?;
        self.with_mut(agent, |policy| policy.add_rules(&rules))
            .ok_or_else(|| GateError::UnknownAgent(agent.to_owned()))
    }

    /// Runs `f` on an agent's policy under the write lock; `None` for an
    /// unknown agent.
    fn with_mut<T>(&self, agent: &str, f: impl FnOnce(&mut AgentPolicy) -> T) -> Option<T> {
        let mut map = self
            .policies
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get_mut(agent).map(f)
    }

    /// The ids of every agent.
    pub fn ids(&self) -> Vec<String> {
        self.policies
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }
}

impl Agents {
    /// Recomputes every agent's denied paths from its deny rules on the
    /// file tools of `file_tools` (names).
    pub fn deny_file_paths(&self, file_tools: &[String]) {
        let mut map = self
            .policies
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for policy in map.values_mut() {
            policy.deny_file_paths(|pattern| {
                file_tools
                    .iter()
                    .any(|t| warden_policy::glob::matches(pattern, t))
            });
        }
    }

    /// Sets the levels progressive trust gives an agent (an unknown agent
    /// has none to set).
    pub fn set_trust(&self, agent: &str, trust: Option<warden_policy::TrustLevels>) {
        self.with_mut(agent, |policy| policy.set_trust(trust));
    }
}

/// The decision for an agent the gate does not know.
pub(crate) fn unknown_agent(agent: &str) -> Decision {
    Decision::deny(
        warden_policy::Layer::Category,
        format!("agent `{agent}` is not configured; add it under [agents] in warden.toml"),
    )
}
