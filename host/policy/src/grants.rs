//! Deciding with time-boxed capability grants.
//!
//! Attack: an agent keeping a right beyond the task it was given for —
//! using a grant after it expired, in another session, outside its
//! boundary (another directory — directly or through a symlink inside
//! the boundary — host or branch), or to get past an
//! explicit deny rule or a circuit breaker. A grant here only turns a
//! call the policy would ask about or refuse by level, constraint or mode
//! into an allow, and only while `now` is inside its validity window;
//! the agent's denied list, deny rules, malformed input and circuit
//! breakers are never overridden.
//! The clock is the caller's: this module never reads it.

use std::collections::HashMap;
use std::ops::Deref;

use crate::capability::{Boundary, Capability, CapabilityGrant};
use crate::decision::{Decision, Layer, Verdict};
use crate::facts::{Call, Env};
use crate::rule::SpecifierKind;
use crate::{AgentPolicy, glob};

/// One agent's grants, indexed by what they cover.
#[derive(Debug, Default, Clone)]
struct AgentGrants {
    tools: HashMap<String, Vec<CapabilityGrant>>,
    tool_globs: Vec<CapabilityGrant>,
    categories: HashMap<String, Vec<CapabilityGrant>>,
    /// By action type, and by `category:*` for whole action categories.
    actions: HashMap<String, Vec<CapabilityGrant>>,
}

/// The grants in force, by agent. Rebuild it when grants change; expiry
/// needs no rebuild (each decision passes `now`).
#[derive(Debug, Default, Clone)]
pub struct GrantSet {
    agents: HashMap<String, AgentGrants>,
    len: usize,
}

impl GrantSet {
    pub fn new(grants: impl IntoIterator<Item = CapabilityGrant>) -> GrantSet {
        let mut set = GrantSet::default();
        for grant in grants {
            let agent = set.agents.entry(grant.agent.clone()).or_default();
            match &grant.capability {
                Capability::Tool(t) if t.contains(['*', '?']) => agent.tool_globs.push(grant),
                Capability::Tool(t) => agent.tools.entry(t.clone()).or_default().push(grant),
                Capability::Category(c) => {
                    agent.categories.entry(c.clone()).or_default().push(grant)
                }
                Capability::Action(a) => agent.actions.entry(a.clone()).or_default().push(grant),
                // Levels change through trust, not per call.
                Capability::Level(_) => continue,
            }
            set.len += 1;
        }
        set
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first grant (in issue order within each kind: tool, tool glob,
    /// category, action) that covers the call at `now_ms`.
    pub fn covering(
        &self,
        agent: &str,
        session: &str,
        call: &Call<'_>,
        env: &Env<'_>,
        now_ms: u64,
    ) -> Option<&CapabilityGrant> {
        let grants = self.agents.get(agent)?;
        let name = call.tool.normalized_name();
        let action = call.tool.action_type;
        let action_category = action
            .split_once(':')
            .map(|(c, _)| format!("{c}:*"))
            .unwrap_or_default();
        let candidates = grants
            .tools
            .get(name.as_ref())
            .into_iter()
            .flatten()
            .chain(grants.tool_globs.iter().filter(|g| match &g.capability {
                Capability::Tool(p) => glob::matches(p, &name),
                _ => false,
            }))
            .chain(
                grants
                    .categories
                    .get(call.tool.category)
                    .into_iter()
                    .flatten(),
            )
            .chain(grants.actions.get(action).into_iter().flatten())
            .chain(grants.actions.get(&action_category).into_iter().flatten());
        // The call's path, normalised once for every grant's boundary, and
        // where it leads once symlinks are resolved: both must be inside
        // (a symlink inside the boundary must not carry a grant out).
        let (path, resolved) = match call.tool.specifier_kind() {
            SpecifierKind::Path => (
                call.specifier
                    .and_then(|s| crate::path::normalize(s, env.cwd).ok()),
                call.resolved_path
                    .and_then(|s| crate::path::normalize(s, env.cwd).ok()),
            ),
            _ => (None, None),
        };
        candidates.into_iter().find(|g| {
            g.active_at(now_ms)
                && g.session.as_deref().is_none_or(|s| s == session)
                && within(&g.boundary, call, path.as_deref(), env)
                && (resolved.is_none() || within(&g.boundary, call, resolved.as_deref(), env))
        })
    }
}

/// Whether the call's specifier is inside the boundary list that applies
/// to its kind: paths for file tools, hosts for tools that reach the
/// network (web, external data, browser, communication), branches for
/// version-control tools. Lists of other kinds do not narrow this call.
fn within(boundary: &Boundary, call: &Call<'_>, path: Option<&str>, env: &Env<'_>) -> bool {
    let spec = call.specifier;
    if call.tool.specifier_kind() == SpecifierKind::Path {
        if boundary.paths.is_empty() {
            return true;
        }
        let Some(path) = path else {
            return false;
        };
        return boundary.paths.iter().any(|p| {
            let p = if is_plain_absolute(p) {
                std::borrow::Cow::Borrowed(p.as_str())
            } else {
                std::borrow::Cow::Owned(crate::path::normalize(p, env.cwd).unwrap_or_default())
            };
            let base = p.trim_end_matches('/');
            path == base
                || path
                    .strip_prefix(base)
                    .is_some_and(|rest| rest.starts_with('/'))
                || (p.contains(['*', '?']) && glob::matches(&p, path))
        });
    }
    match call.tool.category {
        "web" | "external-data" | "browser" | "communication" if !boundary.hosts.is_empty() => spec
            .map(host_of)
            .is_some_and(|h| boundary.hosts.iter().any(|p| glob::matches(p, &h))),
        "version-control" if !boundary.branches.is_empty() => spec
            .map(branch_of)
            .is_some_and(|b| boundary.branches.iter().any(|p| glob::matches(p, b))),
        _ => true,
    }
}

/// The branch a git specifier names: after its last `:` (`origin:main`,
/// `create:feat/x`), or the whole specifier. Branch names cannot hold `:`.
fn branch_of(spec: &str) -> &str {
    spec.rsplit_once(':').map_or(spec, |(_, b)| b)
}

/// An absolute path with nothing to normalise (no `.`, `..`, `//`, `~`).
fn is_plain_absolute(p: &str) -> bool {
    p.starts_with('/')
        && !p.contains("//")
        && !p.contains('~')
        && !p.split('/').any(|c| c == "." || c == "..")
}

/// The host of `https://host:port/path`, `host:port` or `host`.
fn host_of(spec: &str) -> String {
    let rest = spec.split_once("://").map_or(spec, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.split(':').next().unwrap_or(authority),
    };
    host.to_ascii_lowercase()
}

fn format_until(ms: u64) -> String {
    format!("{ms} ms after the Unix epoch")
}

/// The policy's decision, with grants: a call the policy would ask about
/// or refuse (by category, constraint or mode) is allowed by an active
/// grant covering it. The agent's denied list, explicit deny rules,
/// malformed input and circuit breakers stand. A call still refused says which grant would allow it
/// and how to ask for one.
///
/// `grants` is asked for the grants in force only when the policy alone
/// would not allow the call: a call the rules allow costs no grant read.
pub fn decide_with_grants<G: Deref<Target = GrantSet>>(
    policy: &AgentPolicy,
    call: &Call<'_>,
    env: &Env<'_>,
    grants: impl FnOnce() -> G,
    session: &str,
    now_ms: u64,
) -> Decision {
    let decision = policy.decide(call, env);
    let overridable = match (decision.decision, decision.layer) {
        (Verdict::Allow, _) => return decision,
        (_, Layer::Input | Layer::CircuitBreaker) => false,
        (Verdict::Deny, Layer::Rule) => false,
        (Verdict::Deny, Layer::Category) => policy.denied_entry(&call.tool).is_none(),
        _ => true,
    };
    if !overridable {
        return decision;
    }
    if let Some(grant) = grants().covering(&policy.id, session, call, env, now_ms) {
        let mut allowed = Decision::allow(
            Layer::Grant,
            format!(
                "`{}` is allowed by grant {} ({}) for the goal \"{}\", valid until {}",
                call.tool.normalized_name(),
                grant.id,
                grant.capability,
                grant.goal,
                format_until(grant.valid_to_ms)
            ),
        );
        allowed.grant = Some(grant.id.clone());
        return allowed;
    }
    let mut refused = decision;
    refused.reason = format!(
        "{}; a capability grant for `tool:{}` (or its category `category:{}`) would allow it: \
         call `request_capability` with that capability, a justification and a ttl",
        refused.reason,
        call.tool.normalized_name(),
        call.tool.category
    );
    refused
}

#[cfg(test)]
mod tests;
