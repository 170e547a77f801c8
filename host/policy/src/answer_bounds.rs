//! What an answer from the agent's own client may make permanent.
//!
//! Attack: an agent answering its own ask through its MCP client (or a
//! person clicking through a prefilled form) with "always allow" and a
//! rule far wider than the call — `*`, another tool, `fs_*`, `rm *` — and
//! so widening its own rules for good. From the client channel, "always
//! allow" may add only a rule for the asked tool that covers the asked
//! call and no more: the prefilled exact rule, or an equivalent spelling
//! without wildcards. Circuit breakers and high-risk actions never become
//! "always" from a client at all. Broader rules come from operators
//! (audited with actor and reason) or the config.

use crate::engine::AgentPolicy;
use crate::facts::{Call, Env};
use crate::rule::{Rule, RuleSet};
use crate::specifier::Prepared;
use crate::{Decision, Layer, ToolFacts};

/// Action types only an operator may allow for good: tool creation,
/// deployment, level changes.
const HIGH_RISK_ACTIONS: &[&str] = &[
    "tool:create",
    "deploy:staging",
    "deploy:production",
    "org:promote",
];

/// Words in a tool's name that suggest credentials.
const CREDENTIAL_WORDS: &[&str] = &["secret", "credential", "password", "token", "key"];

/// Why no client answer may make calls of this tool, decided this way,
/// permanent; `None` when "always allow" may be offered.
pub fn never_always(tool: &ToolFacts<'_>, decision: &Decision) -> Option<String> {
    if decision.layer == Layer::CircuitBreaker {
        return Some(
            "a circuit breaker always asks; only an operator can add a rule past it".into(),
        );
    }
    if HIGH_RISK_ACTIONS.contains(&tool.action_type) || tool.action_type.starts_with("deploy:") {
        return Some(format!(
            "`{}` actions are high-risk; only an operator can allow them for good",
            tool.action_type
        ));
    }
    let name = tool.normalized_name();
    if CREDENTIAL_WORDS.iter().any(|w| name.contains(w)) {
        return Some(format!(
            "`{name}` looks like access to credentials; only an operator can allow it for good"
        ));
    }
    None
}

impl AgentPolicy {
    /// Why `rule`, offered by the person behind the agent's client as an
    /// "always allow" answer to `call`, may not be added; `None` when it
    /// may. It must name the asked tool (no glob, no bare `*`), carry a
    /// specifier when the call has one, have no wildcard unless it is the
    /// prefilled exact rule (`exact`, the ask's [`Decision::suggested_rule`]),
    /// and cover the call.
    ///
    /// [`Decision::suggested_rule`]: crate::Decision::suggested_rule
    pub fn client_rule_refusal(
        &self,
        call: &Call<'_>,
        env: &Env<'_>,
        exact: &str,
        rule: &str,
    ) -> Option<String> {
        let rule = rule.trim();
        if rule == exact {
            return None;
        }
        let parsed = match Rule::parse(rule) {
            Ok(r) => r,
            Err(e) => return Some(e.to_string()),
        };
        let name = call.tool.normalized_name();
        let refused = |why: &str| {
            Some(format!(
                "the rule `{rule}` {why}; an answer from the agent's client may only add a rule for \
                 exactly the asked call (`{exact}`); broader rules need an operator \
                 (`warden approvals approve ID --always RULE --actor NAME --confirm --reason TEXT`)"
            ))
        };
        if parsed.tool_pattern().contains('*') {
            return refused("is a pattern over tool names");
        }
        if parsed.tool_pattern() != name {
            return refused(&format!("names another tool than `{name}`"));
        }
        if call.specifier.is_some() && !parsed.is_scoped() {
            return refused(&format!("would allow every call of `{name}`"));
        }
        if parsed
            .raw_spec()
            .is_some_and(|s| s.contains(['*', '?', '[']))
        {
            return refused("has wildcards, so it is broader than the asked call");
        }
        let Ok(list) = RuleSet::parse(&[rule.to_owned()], &[], &[]) else {
            return refused("does not parse");
        };
        let covered = Prepared::new(call, env)
            .ok()
            .and_then(|p| p.covered_by(&list.allow, &name, env));
        if covered.is_none() {
            return refused("does not match the asked call");
        }
        None
    }
}

#[cfg(test)]
mod tests;
