//! Judging an agent's request for a capability grant
//! (`request_capability`).
//!
//! Attack: an agent (or text injected into it) granting itself dangerous
//! rights by asking for them — network egress to leak data, credentials,
//! deployment, creating tools, a higher access level — or asking for a
//! harmless capability for far longer than a task needs. Only requests
//! inside the operator's auto-grant bounds are granted without a person;
//! the high-risk kinds below always go to a person, whatever the bounds
//! say, and the operator can add more but never remove these.

use crate::capability::Capability;
use crate::glob;

/// Categories whose tools reach the network.
const EGRESS_CATEGORIES: &[&str] = &["web", "external-data", "browser", "communication"];
/// Action types that are high-risk whatever their tool's category.
const HIGH_RISK_ACTIONS: &[&str] = &[
    "deploy:*",
    "tool:create",
    "comms:external",
    "external_data:request",
    "browser:navigate",
    "db:admin",
    "org:promote",
];
/// Names that suggest credentials.
const CREDENTIAL_WORDS: &[&str] = &["secret", "credential", "password", "token", "key"];

/// The longest grant a person may approve unless the operator says
/// otherwise: one day.
pub const DEFAULT_MAX_TTL_MS: u64 = 24 * 3600 * 1000;

/// What the operator allows without a person (`[capability-grants]` in `warden.toml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantBounds {
    /// Capabilities that may be granted automatically; a pattern covers a
    /// request of the same kind whose value its glob matches.
    pub auto_grant: Vec<Capability>,
    /// The longest automatic grant, in milliseconds.
    pub max_auto_ttl_ms: u64,
    /// The longest grant a person may approve, in milliseconds: a longer
    /// request is granted for this long.
    pub max_ttl_ms: u64,
    /// More capabilities that always need a person.
    pub high_risk: Vec<Capability>,
}

impl GrantBounds {
    /// Nothing automatic: every request goes to a person.
    pub fn none() -> GrantBounds {
        GrantBounds {
            auto_grant: Vec::new(),
            max_auto_ttl_ms: 0,
            max_ttl_ms: DEFAULT_MAX_TTL_MS,
            high_risk: Vec::new(),
        }
    }
}

/// What a capability reaches: the category and action type of each tool
/// it covers (for a category or action capability, just that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach<'a> {
    pub tool: Option<&'a str>,
    pub category: Option<&'a str>,
    pub action_type: Option<&'a str>,
}

/// The verdict on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestVerdict {
    /// Grant it now.
    Auto,
    /// A person must approve it; the reason says why.
    Person(String),
}

fn same_kind_match(pattern: &Capability, cap: &Capability) -> bool {
    match (pattern, cap) {
        (Capability::Tool(p), Capability::Tool(c))
        | (Capability::Category(p), Capability::Category(c))
        | (Capability::Action(p), Capability::Action(c))
        | (Capability::Level(p), Capability::Level(c)) => glob::matches(p, c),
        _ => false,
    }
}

/// Why `cap` reaching `reach` is high-risk, if it is.
fn high_risk(bounds: &GrantBounds, cap: &Capability, reach: &[Reach<'_>]) -> Option<String> {
    if let Capability::Level(level) = cap {
        return Some(format!(
            "a change of access level (to `{level}`) always needs a person"
        ));
    }
    if bounds.high_risk.iter().any(|p| same_kind_match(p, cap)) {
        return Some(format!(
            "`{cap}` is listed as high-risk in [capability-grants] high-risk"
        ));
    }
    let credential = |name: &str| CREDENTIAL_WORDS.iter().any(|w| name.contains(w));
    let value = match cap {
        Capability::Tool(v) | Capability::Category(v) | Capability::Action(v) => v.as_str(),
        Capability::Level(_) => "",
    };
    if credential(value) {
        return Some(format!("`{cap}` looks like access to credentials"));
    }
    // The capability itself reaches what it names.
    let own = match cap {
        Capability::Category(c) => Some(Reach {
            tool: None,
            category: Some(c.as_str()),
            action_type: None,
        }),
        Capability::Action(a) => Some(Reach {
            tool: None,
            category: None,
            action_type: Some(a.as_str()),
        }),
        _ => None,
    };
    for r in reach.iter().chain(own.as_ref()) {
        if let Some(c) = r.category
            && EGRESS_CATEGORIES.contains(&c)
        {
            return Some(format!("`{cap}` reaches the network ({c} tools)"));
        }
        if let Some(c) = r.category
            && c == "deployment"
        {
            return Some(format!("`{cap}` reaches deployment tools"));
        }
        if let Some(a) = r.action_type
            && HIGH_RISK_ACTIONS
                .iter()
                .any(|p| glob::matches(p, a) || glob::matches(a, p))
        {
            return Some(format!("`{cap}` covers the high-risk action `{a}`"));
        }
        if let Some(t) = r.tool
            && credential(t)
        {
            return Some(format!(
                "`{cap}` covers `{t}`, which looks like credentials"
            ));
        }
        if let Some(p) = r.tool.and_then(|t| {
            bounds
                .high_risk
                .iter()
                .find(|p| same_kind_match(p, &Capability::Tool(t.to_owned())))
        }) {
            return Some(format!("`{cap}` covers high-risk `{p}`"));
        }
    }
    None
}

/// Whether a request for `cap` (reaching `reach`) for `ttl_ms` may be
/// granted without a person.
pub fn judge_request(
    bounds: &GrantBounds,
    cap: &Capability,
    reach: &[Reach<'_>],
    ttl_ms: u64,
) -> RequestVerdict {
    if let Some(why) = high_risk(bounds, cap, reach) {
        return RequestVerdict::Person(format!("{why}, so a person must approve the grant"));
    }
    if !bounds.auto_grant.iter().any(|p| same_kind_match(p, cap)) {
        return RequestVerdict::Person(format!(
            "`{cap}` is outside the automatic grant bounds, so a person must approve it"
        ));
    }
    if ttl_ms > bounds.max_auto_ttl_ms {
        return RequestVerdict::Person(format!(
            "a ttl of {} s is longer than automatic grants may last ({} s), so a person must approve it",
            ttl_ms / 1000,
            bounds.max_auto_ttl_ms / 1000
        ));
    }
    RequestVerdict::Auto
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(s: &str) -> Capability {
        s.parse().unwrap()
    }

    fn bounds() -> GrantBounds {
        GrantBounds {
            auto_grant: vec![
                cap("tool:fs_*"),
                cap("category:file-system"),
                cap("action:code:*"),
                // An operator listing high-risk kinds here changes nothing.
                cap("category:web"),
                cap("action:deploy:*"),
                cap("level:*"),
                cap("tool:http_*"),
            ],
            max_auto_ttl_ms: 3_600_000,
            max_ttl_ms: DEFAULT_MAX_TTL_MS,
            high_risk: vec![cap("tool:fs_delete")],
        }
    }

    const NONE: Reach<'static> = Reach {
        tool: None,
        category: None,
        action_type: None,
    };

    fn reach(tool: &'static str, category: &'static str, action: &'static str) -> Reach<'static> {
        Reach {
            tool: Some(tool),
            category: Some(category),
            action_type: Some(action),
        }
    }

    #[test]
    fn low_risk_requests_inside_the_bounds_are_granted() {
        let b = bounds();
        let write = reach("fs_write", "file-system", "code:write");
        assert_eq!(
            judge_request(&b, &cap("tool:fs_write"), &[write], 3_600_000),
            RequestVerdict::Auto
        );
        assert_eq!(
            judge_request(&b, &cap("category:file-system"), &[NONE], 60_000),
            RequestVerdict::Auto
        );
        assert_eq!(
            judge_request(&b, &cap("action:code:write"), &[NONE], 1),
            RequestVerdict::Auto
        );
    }

    #[test]
    fn requests_outside_the_bounds_go_to_a_person() {
        let b = bounds();
        let write = reach("fs_write", "file-system", "code:write");
        assert!(matches!(
            judge_request(&b, &cap("tool:fs_write"), &[write], 3_600_001),
            RequestVerdict::Person(r) if r.contains("ttl")
        ));
        let run = reach("sh_run", "terminal", "test:run");
        assert!(matches!(
            judge_request(&b, &cap("tool:sh_run"), &[run], 1_000),
            RequestVerdict::Person(r) if r.contains("outside")
        ));
        assert!(matches!(
            judge_request(&GrantBounds::none(), &cap("tool:fs_write"), &[write], 1),
            RequestVerdict::Person(_)
        ));
    }

    #[test]
    fn high_risk_requests_always_go_to_a_person() {
        let b = bounds();
        let cases: Vec<(&str, Reach<'static>)> = vec![
            ("category:web", NONE),
            (
                "tool:http_get",
                reach("http_get", "web", "external_data:request"),
            ),
            ("action:deploy:production", NONE),
            ("level:elevated", NONE),
            (
                "tool:fs_read_secret",
                reach("fs_read_secret", "file-system", "code:read"),
            ),
            (
                "tool:fs_delete",
                reach("fs_delete", "file-system", "code:delete"),
            ),
            (
                "tool:fs_*",
                reach("fs_publish", "deployment", "deploy:staging"),
            ),
            ("action:tool:create", NONE),
        ];
        for (c, r) in cases {
            assert!(
                matches!(
                    judge_request(&b, &cap(c), &[r], 1),
                    RequestVerdict::Person(_)
                ),
                "{c} must need a person"
            );
        }
    }
}
