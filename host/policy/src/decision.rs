//! What the engine answers, and why.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// The layer of the engine that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// The call itself is malformed (a NUL byte in a path).
    Input,
    /// Denied list, allowed list, or the level's categories.
    Category,
    /// A sub-constraint of the agent's level (file scope, network, ...).
    Constraint,
    /// An allow, ask or deny rule.
    Rule,
    /// A destructive command or path that always needs a person.
    CircuitBreaker,
    /// A read-only tool or read-only shell command.
    ReadOnly,
    /// The agent's mode.
    Mode,
    /// A time-boxed capability grant.
    Grant,
}

/// `{ decision, reason, rule, layer }`: what to do with a call, a reason
/// that never contradicts it, and the rule that decided, if one did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub decision: Verdict,
    pub reason: String,
    pub rule: Option<String>,
    pub layer: Layer,
    /// The capability grant that allowed the call, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// For an ask: the allow rule that would allow exactly this call (for a
    /// compound command line, the whole line, which a person should narrow),
    /// made from the same prepared call the decision read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_rule: Option<String>,
    /// An allow that holds only because the call reads (a read-only
    /// command, a tool without side effects). The call must then run
    /// where it cannot write, so that a line the analyser misread fails to
    /// write instead of writing (`warden_api::Effects::ReadOnly`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

impl Decision {
    pub fn new(decision: Verdict, layer: Layer, reason: impl Into<String>) -> Decision {
        Decision {
            decision,
            reason: reason.into(),
            rule: None,
            layer,
            grant: None,
            suggested_rule: None,
            read_only: false,
        }
    }

    pub fn allow(layer: Layer, reason: impl Into<String>) -> Decision {
        Decision::new(Verdict::Allow, layer, reason)
    }

    pub fn ask(layer: Layer, reason: impl Into<String>) -> Decision {
        Decision::new(Verdict::Ask, layer, reason)
    }

    pub fn deny(layer: Layer, reason: impl Into<String>) -> Decision {
        Decision::new(Verdict::Deny, layer, reason)
    }

    pub fn with_rule(mut self, rule: &str) -> Decision {
        self.rule = Some(rule.to_owned());
        self
    }
}

/// Joins the parts of a reason with one allocation: decisions are made on
/// every call, and `format!` costs more than the rest of a simple one.
pub(crate) fn concat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        out.push_str(p);
    }
    out
}
