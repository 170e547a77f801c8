//! The decision: category gate, sub-constraints, rules, circuit breakers,
//! read-only defaults and the mode, in that order. See `Policy::decide`
//! for the order and why it is that order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::Verdict;
use crate::action::{ActionSelector, ActionTypes};
use crate::config::{AgentConfig, PolicyConfig};
use crate::constraints::SubConstraints;
use crate::decision::{Decision, Layer, concat};
use crate::facts::{Call, Env};
use crate::level::{Level, known_categories};
use crate::path::PathEnv;
use crate::protect::{Hit, Protection};
use crate::rule::RuleSet;
use crate::specifier::Prepared;
use crate::{Mode, PolicyError, ToolFacts, VcsOp, constraints_check, glob};

/// One agent's compiled policy.
#[derive(Debug, Clone)]
pub struct AgentPolicy {
    pub id: String,
    /// `None`: no level gating (only the given rules and mode apply).
    pub level: Option<Level>,
    /// The categories a custom level grants.
    custom_categories: Option<BTreeSet<String>>,
    pub mode: Mode,
    allowed: Vec<String>,
    denied: Vec<String>,
    /// `None`: no sub-constraints apply.
    pub constraints: Option<SubConstraints>,
    pub(crate) approvals: Vec<ActionSelector>,
    pub(crate) network_allowlist: Vec<String>,
    rules: RuleSet,
    /// Rules for given signed-in principals (only deny and ask).
    pub(crate) principals: Vec<crate::principal::PrincipalRules>,
    /// Levels earned through progressive trust; they replace `level` in
    /// the category gate.
    trust: Option<TrustLevels>,
    /// Denied and protected paths: the configuration's, plus the paths
    /// of deny rules on file tools (see [`AgentPolicy::deny_file_paths`]).
    protection: Arc<Protection>,
    /// The configuration's alone.
    base_protection: Arc<Protection>,
}

/// The levels progressive trust gives an agent: one overall, or one per
/// category (a category without its own uses `overall`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustLevels {
    pub overall: Option<Level>,
    pub categories: BTreeMap<String, Level>,
}

/// Every agent's policy, compiled from configuration.
#[derive(Debug, Clone)]
pub struct Policy {
    agents: BTreeMap<String, AgentPolicy>,
    action_types: ActionTypes,
}

fn at(path: &str, e: PolicyError) -> PolicyError {
    PolicyError::At {
        path: path.to_owned(),
        error: Box::new(e),
    }
}

impl Policy {
    /// Compiles a configuration. `builtin_action_types` is the taxonomy of
    /// `warden-api`. Errors carry the key path of what is wrong.
    pub fn from_config(
        config: &PolicyConfig,
        builtin_action_types: &[&str],
    ) -> Result<Policy, PolicyError> {
        let action_types = ActionTypes::new(builtin_action_types, &config.action_types)
            .map_err(|e| at("action-types", e))?;
        let global = RuleSet::parse(&config.rules.allow, &config.rules.ask, &config.rules.deny)
            .map_err(|e| at("rules", e))?;
        for (name, level) in &config.levels {
            for c in &level.categories {
                if !known_categories().any(|k| k == c) {
                    return Err(at(
                        &format!("levels.{name}.categories"),
                        PolicyError::UnknownCategory(c.clone()),
                    ));
                }
            }
            for a in &level.requires_approval {
                action_types
                    .selector(a)
                    .map_err(|e| at(&format!("levels.{name}.requires-approval"), e))?;
            }
        }
        let protection = Arc::new(Protection::new(&config.protect.read, &config.protect.write));
        let mut agents = BTreeMap::new();
        for (id, agent) in &config.agents {
            let mut compiled = AgentPolicy::compile(id, agent, config, &global, &action_types)?;
            compiled.set_protection(protection.clone());
            agents.insert(id.clone(), compiled);
        }
        Ok(Policy {
            agents,
            action_types,
        })
    }

    pub fn agent(&self, id: &str) -> Option<&AgentPolicy> {
        self.agents.get(id)
    }

    pub fn agents(&self) -> impl Iterator<Item = &AgentPolicy> {
        self.agents.values()
    }

    pub fn action_types(&self) -> &ActionTypes {
        &self.action_types
    }
}

impl AgentPolicy {
    fn compile(
        id: &str,
        agent: &AgentConfig,
        config: &PolicyConfig,
        global: &RuleSet,
        action_types: &ActionTypes,
    ) -> Result<AgentPolicy, PolicyError> {
        let level = Level::parse(&agent.level);
        let (custom_categories, base) = match &level {
            Level::Custom(name) => {
                let def = config.levels.get(name).ok_or_else(|| {
                    at(
                        &format!("agents.{id}.level"),
                        PolicyError::UnknownLevel(name.clone()),
                    )
                })?;
                let constraints = SubConstraints {
                    file_scope: def.file_scope,
                    network: def.network,
                    terminal: def.terminal,
                    git: def.git,
                    code_execution: def.code_execution,
                    requires_approval: def.requires_approval.clone(),
                    restricted_commands: def
                        .restricted_commands
                        .clone()
                        .unwrap_or_else(crate::constraints::default_restricted_commands),
                };
                (Some(def.categories.iter().cloned().collect()), constraints)
            }
            builtin => (None, builtin.default_constraints()),
        };
        let constraints = base.apply(&agent.constraints);
        let approvals = constraints
            .requires_approval
            .iter()
            .map(|a| action_types.selector(a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| at(&format!("agents.{id}.constraints.requires-approval"), e))?;
        let mut rules = global.clone();
        let own = RuleSet::parse(&agent.rules.allow, &agent.rules.ask, &agent.rules.deny)
            .map_err(|e| at(&format!("agents.{id}.rules"), e))?;
        rules.extend(&own);
        let principals = agent
            .principals
            .iter()
            .enumerate()
            .map(|(i, p)| {
                crate::principal::PrincipalRules::compile(
                    p,
                    &format!("agents.{id}.principals[{i}]"),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tools = |list: &[String]| {
            list.iter()
                .map(|t| {
                    let t = t.trim().to_ascii_lowercase();
                    crate::renamed_tool(&t).unwrap_or(t)
                })
                .collect()
        };
        Ok(AgentPolicy {
            id: id.to_owned(),
            level: Some(level),
            custom_categories,
            mode: agent.mode,
            allowed: tools(&agent.allowed),
            denied: tools(&agent.denied),
            constraints: Some(constraints),
            approvals,
            network_allowlist: agent.network_allowlist.clone(),
            rules,
            principals,
            trust: None,
            protection: Arc::default(),
            base_protection: Arc::default(),
        })
    }

    /// A policy with no level, lists or constraints: only `rules` and
    /// `mode` apply. What `warden policy check` uses without a config.
    pub fn rules_only(id: &str, mode: Mode, rules: RuleSet) -> AgentPolicy {
        AgentPolicy {
            id: id.to_owned(),
            level: None,
            custom_categories: None,
            mode,
            allowed: Vec::new(),
            denied: Vec::new(),
            constraints: None,
            approvals: Vec::new(),
            network_allowlist: Vec::new(),
            rules,
            principals: Vec::new(),
            trust: None,
            protection: Arc::default(),
            base_protection: Arc::default(),
        }
    }

    /// The denied and protected paths.
    pub fn protection(&self) -> &Arc<Protection> {
        &self.protection
    }

    /// Replaces the denied and protected paths (the defaults apply until
    /// then).
    pub fn set_protection(&mut self, protection: Arc<Protection>) {
        self.base_protection = protection.clone();
        self.protection = protection;
    }

    /// Makes the path of every deny rule on a file tool (`fs_read(/secrets/**)`,
    /// where `is_file_tool` says which tool patterns name file tools) a
    /// denied path for every tool: a deny rule on a file is about the
    /// file, not one tool's access to it.
    pub fn deny_file_paths(&mut self, is_file_tool: impl Fn(&str) -> bool) {
        let paths: Vec<String> = self
            .rules
            .deny
            .iter()
            .filter(|r| is_file_tool(r.tool_pattern()))
            .filter_map(|r| r.raw_spec().map(str::to_owned))
            .collect();
        self.protection = if paths.is_empty() {
            self.base_protection.clone()
        } else {
            Arc::new(self.base_protection.with_denied(&paths))
        };
    }

    /// Sets (or, with `None`, clears) the levels trust gives this agent.
    pub fn set_trust(&mut self, trust: Option<TrustLevels>) {
        self.trust = trust;
    }

    /// Adds rules after this agent's own (e.g. from `--allow` flags or an
    /// "always allow" answer).
    pub fn add_rules(&mut self, rules: &RuleSet) {
        self.rules.extend(rules);
    }

    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// The entry of the agent's denied list naming `tool`, if any. Nothing
    /// overrides it: not an allowed list, a trust level or a grant.
    pub fn denied_entry(&self, tool: &ToolFacts<'_>) -> Option<&str> {
        let name = tool.normalized_name();
        self.denied
            .iter()
            .find(|d| glob::matches(d, &name))
            .map(String::as_str)
    }

    /// The category gate: denied list > allowed list > the level's
    /// categories > deny. Decides whether the agent may see the tool at all.
    pub fn category_gate(&self, tool: &ToolFacts<'_>) -> Result<(), Decision> {
        let name = tool.normalized_name();
        let agent = &self.id;
        if let Some(entry) = self.denied_entry(tool) {
            return Err(Decision::deny(
                Layer::Category,
                format!("agent `{agent}` may not use `{name}`: it is on the agent's denied list (`{entry}`)"),
            )
            .with_rule(entry));
        }
        if self.allowed.iter().any(|a| glob::matches(a, &name)) {
            return Ok(());
        }
        let trusted = self
            .trust
            .as_ref()
            .and_then(|t| t.categories.get(tool.category).or(t.overall.as_ref()));
        if let Some(level) = trusted {
            if level.grants_category(tool.category) {
                return Ok(());
            }
            return Err(Decision::deny(
                Layer::Category,
                format!(
                    "agent `{agent}` has earned trust level `{}` for {} tools, which does not cover `{name}`; \
                     trust grows with successful calls and good feedback, or request a grant for `tool:{name}`",
                    level.name(),
                    tool.category
                ),
            ));
        }
        let Some(level) = &self.level else {
            return Ok(());
        };
        let granted = match &self.custom_categories {
            Some(set) => set.contains(tool.category),
            None => level.grants_category(tool.category),
        };
        if granted {
            return Ok(());
        }
        Err(Decision::deny(
            Layer::Category,
            format!(
                "agent `{agent}` at level `{}` may not use {} tools such as `{name}`; add `{name}` to the agent's \
                 allowed list or give the agent a level that grants `{}`",
                level.name(),
                tool.category,
                tool.category
            ),
        ))
    }

    /// Whether the agent may see (list) the tool.
    pub fn visible(&self, tool: &ToolFacts<'_>) -> bool {
        self.category_gate(tool).is_ok()
    }

    /// Decides one call. The order, and why:
    /// 1. category gate — a tool the agent may not see is denied outright;
    /// 2. malformed input (a NUL byte in a path) — denied;
    /// 3. sub-constraints — the level's hard limits (scope, network, ...);
    /// 4. deny rules — an explicit deny beats everything after it;
    /// 5. plan mode — no side effects (read-only commands are none),
    ///    whatever allow rules say;
    /// 6. circuit breakers — always ask, in every mode, over any allow;
    /// 7. ask rules, then approval requirements — a person decides;
    /// 8. allow rules;
    /// 9. read-only tools and read-only shell commands — allowed;
    /// 10. the mode's default for what is left.
    pub fn decide(&self, call: &Call<'_>, env: &Env<'_>) -> Decision {
        if let Err(d) = self.category_gate(&call.tool) {
            return d;
        }
        let name = call.tool.normalized_name();
        let prepared = match Prepared::new(call, env) {
            Ok(p) => p,
            Err(reason) => return Decision::deny(Layer::Input, reason),
        };
        let mut decision = self.decide_prepared(call, env, &prepared, &name);
        // Whatever layer allowed it, a call that reads only is held to
        // reading where it runs: an allow rule or the mode may have
        // allowed it first, but its text was judged read-only all the same.
        decision.read_only = decision.decision == Verdict::Allow
            && (!call.tool.has_side_effects() || prepared.is_read_only_command());
        if decision.decision == Verdict::Ask {
            decision.suggested_rule = Some(
                prepared
                    .exact_rule(&name)
                    .unwrap_or_else(|| prepared.display(&name)),
            );
        }
        decision
    }

    /// [`AgentPolicy::decide`] after the category gate, on the prepared call.
    fn decide_prepared(
        &self,
        call: &Call<'_>,
        env: &Env<'_>,
        prepared: &Prepared<'_>,
        name: &str,
    ) -> Decision {
        if let Some(d) = constraints_check::check(self, call, prepared, env) {
            return d;
        }
        let deny = self.rules.deny.candidates(name, &prepared.probe(true, env));
        for rule in deny.iter() {
            if prepared.fires(rule, env) {
                return Decision::deny(
                    Layer::Rule,
                    prepared.describe(name, "`", &["` is denied by rule `", rule.text(), "`"]),
                )
                .with_rule(rule.text());
            }
        }
        if let Some(d) = self.principal_rule(call, env, prepared, name, true) {
            return d;
        }
        let protected = match self.protection.check(call, prepared, env) {
            Some(Hit::Denied(path, pattern)) => {
                return Decision::deny(
                    Layer::Rule,
                    format!(
                        "`{name}` names `{path}`, a denied path (`[protect] read`: `{pattern}`): \
                         no tool may read or change it"
                    ),
                )
                .with_rule(&format!("protect.read({pattern})"));
            }
            Some(Hit::Protected(path, pattern)) => Some((path, pattern)),
            None => None,
        };
        // A read-only shell command has no side effects whatever its tool
        // declares, so plan mode lets it run.
        if self.mode == Mode::Plan
            && call.tool.has_side_effects()
            && !prepared.is_read_only_command()
        {
            return Decision::deny(
                Layer::Mode,
                format!(
                    "plan mode allows no side effects and `{name}` has them; switch to another mode to make changes"
                ),
            );
        }
        if let Some((path, pattern)) = protected {
            return Decision::ask(
                Layer::CircuitBreaker,
                format!(
                    "protected path: `{name}` would change `{path}` (`[protect] write`: `{pattern}`); \
                     this always needs a person's approval, in every mode"
                ),
            );
        }
        if let Some(reason) = prepared.circuit_breaker(&call.tool, env) {
            return Decision::ask(
                Layer::CircuitBreaker,
                format!(
                    "circuit breaker: {reason}; this always needs a person's approval, in every mode"
                ),
            );
        }
        let ask = self.rules.ask.candidates(name, &prepared.probe(true, env));
        for rule in ask.iter() {
            if prepared.fires(rule, env) {
                return Decision::ask(
                    Layer::Rule,
                    prepared.describe(name, "`", &["` needs approval by rule `", rule.text(), "`"]),
                )
                .with_rule(rule.text());
            }
        }
        if let Some(d) = self.principal_rule(call, env, prepared, name, false) {
            return d;
        }
        if let Some(sel) = self
            .approvals
            .iter()
            .find(|s| s.matches(call.tool.action_type))
        {
            let shown = match sel {
                ActionSelector::Exact(t) | ActionSelector::Category(t) => t,
            };
            return Decision::ask(
                Layer::Constraint,
                format!(
                    "agent `{}` needs approval for `{shown}` actions and `{name}` is `{}`",
                    self.id, call.tool.action_type
                ),
            );
        }
        if let Some(rule) = prepared.covered_by(&self.rules.allow, name, env) {
            return Decision::allow(
                Layer::Rule,
                prepared.describe(name, "`", &["` is allowed by rule `", &rule, "`"]),
            )
            .with_rule(&rule);
        }
        if !call.tool.has_side_effects() {
            return Decision::allow(
                Layer::ReadOnly,
                concat(&["`", name, "` has no side effects"]),
            );
        }
        if prepared.is_read_only_command() {
            return Decision::allow(
                Layer::ReadOnly,
                format!(
                    "`{}` is a read-only command inside the workspace",
                    prepared.display(name)
                ),
            );
        }
        self.mode_default(call, prepared, name, env)
    }

    fn mode_default(
        &self,
        call: &Call<'_>,
        prepared: &Prepared<'_>,
        name: &str,
        env: &Env<'_>,
    ) -> Decision {
        match self.mode {
            // What no rule or breaker could read (`$x -rf src`, `rm -rf $X`,
            // `... | sh`) would otherwise run unseen: autonomy is leave to
            // act within the rules, not around them.
            Mode::Autonomous => match prepared.unread_reason() {
                Some(why) => Decision::ask(
                    Layer::CircuitBreaker,
                    prepared.describe(
                        name,
                        "circuit breaker: `",
                        &[
                            "` runs commands the analyser cannot read (",
                            why,
                            "), so no deny rule or breaker could judge them; in autonomous mode \
                             this needs a person's approval (or an allow rule without wildcards)",
                        ],
                    ),
                ),
                None => Decision::allow(
                    Layer::Mode,
                    prepared.describe(name, "autonomous mode allows `", &["`"]),
                ),
            },
            // Creating or switching a branch and committing change only the
            // local repository and are undone with git itself (the reflog
            // keeps every commit): what spec 3.5 allows by default. Deleting
            // a branch, restore, reset, clone, fetch and push still ask.
            Mode::Default | Mode::AcceptEdits
                if matches!(call.tool.vcs, Some(VcsOp::Branch | VcsOp::Commit)) =>
            {
                Decision::allow(
                    Layer::Mode,
                    prepared.describe(
                        name,
                        "`",
                        &["` changes only the local repository, undoably; default mode allows local commits and branches"],
                    ),
                )
            }
            // Reading from a remote the operator allowlisted for git: spec
            // 3.5's "clone asks unless the host is allowlisted; fetch is
            // allowed for allowlisted hosts".
            Mode::Default | Mode::AcceptEdits
                if call.tool.vcs == Some(VcsOp::FetchAllowlisted) =>
            {
                Decision::allow(
                    Layer::Mode,
                    prepared.describe(
                        name,
                        "`",
                        &["` reads from a host `[sandbox.git] allow-hosts` names; default mode allows it"],
                    ),
                )
            }
            Mode::AcceptEdits if prepared.is_workspace_edit(&call.tool, env) => Decision::allow(
                Layer::Mode,
                prepared.describe(
                    name,
                    "accept-edits mode allows editing `",
                    &["` inside the workspace"],
                ),
            ),
            Mode::Plan => Decision::deny(
                Layer::Mode,
                prepared.describe(name, "plan mode allows no side effects (`", &["`)"]),
            ),
            Mode::Default | Mode::AcceptEdits => Decision::ask(
                Layer::Mode,
                prepared.describe(
                    name,
                    "`",
                    &[
                        "` has side effects and no allow rule covers it; ",
                        &prepared.advice(name),
                    ],
                ),
            ),
        }
    }
}

pub(crate) fn path_env<'a>(env: &Env<'a>) -> PathEnv<'a> {
    PathEnv {
        workspace: env.workspace,
        cwd: env.cwd,
        home: env.home,
    }
}

#[cfg(test)]
mod tests;
