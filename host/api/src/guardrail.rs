//! The guardrail on destructive operator actions: approving with a rule
//! broader than the asked call, removing a plugin, issuing or revoking a
//! capability grant, applying a trust promotion.
//!
//! Attack it stops: a destructive change nobody answers for — made by a
//! script or a slip of the keyboard, or by an agent that got hold of an
//! operator channel, with no name and no reason in the audit log. Each
//! such action needs all three of an actor, an explicit confirmation and
//! a non-blank reason; all three are written to the audit log with the
//! change.

use serde::{Deserialize, Serialize};

use crate::Attribution;

/// What an operator supplies with a destructive action.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Guardrail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default)]
    pub confirm: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Which part of the guardrail is missing (stable codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailViolation {
    MissingActor,
    MissingConfirm,
    MissingReason,
}

impl GuardrailViolation {
    pub fn code(self) -> &'static str {
        match self {
            GuardrailViolation::MissingActor => "missing_actor",
            GuardrailViolation::MissingConfirm => "missing_confirm",
            GuardrailViolation::MissingReason => "missing_reason",
        }
    }
}

/// A destructive action refused for want of its guardrail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{operation} is a destructive operator action: it needs an actor, an explicit confirmation \
     and a non-blank reason (missing: {}); on the command line pass --actor NAME --confirm \
     --reason TEXT, over the admin API the fields actor, confirm: true and reason",
    .violations.iter().map(|v| v.code()).collect::<Vec<_>>().join(", ")
)]
pub struct GuardrailError {
    pub operation: String,
    pub violations: Vec<GuardrailViolation>,
}

impl GuardrailError {
    /// The domain code a refusal carries.
    pub const CODE: &'static str = "guardrail_violated";
}

impl Guardrail {
    /// The actor, confirmation and reason, or what is missing.
    pub fn check(&self, operation: &str) -> Result<Attribution, GuardrailError> {
        let text = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let (actor, reason) = (text(&self.actor), text(&self.reason));
        let mut violations = Vec::new();
        if actor.is_none() {
            violations.push(GuardrailViolation::MissingActor);
        }
        if !self.confirm {
            violations.push(GuardrailViolation::MissingConfirm);
        }
        if reason.is_none() {
            violations.push(GuardrailViolation::MissingReason);
        }
        match (actor, reason) {
            (Some(actor), Some(reason)) if violations.is_empty() => Ok(Attribution {
                actor,
                confirm: true,
                reason: Some(reason),
            }),
            _ => Err(GuardrailError {
                operation: operation.to_owned(),
                violations,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_are_needed() {
        let full = Guardrail {
            actor: Some("ops".into()),
            confirm: true,
            reason: Some("rotating".into()),
        };
        assert_eq!(full.check("x").map(|a| a.actor).as_deref(), Ok("ops"));
        let cases = [
            (
                None,
                true,
                Some("r"),
                vec![GuardrailViolation::MissingActor],
            ),
            (
                Some("a"),
                false,
                Some("r"),
                vec![GuardrailViolation::MissingConfirm],
            ),
            (
                Some("a"),
                true,
                Some("  "),
                vec![GuardrailViolation::MissingReason],
            ),
            (
                Some(" "),
                false,
                None,
                vec![
                    GuardrailViolation::MissingActor,
                    GuardrailViolation::MissingConfirm,
                    GuardrailViolation::MissingReason,
                ],
            ),
        ];
        for (actor, confirm, reason, want) in cases {
            let g = Guardrail {
                actor: actor.map(str::to_owned),
                confirm,
                reason: reason.map(str::to_owned),
            };
            let err = g.check("plugin remove").unwrap_err();
            assert_eq!(err.violations, want);
            assert!(err.to_string().contains("plugin remove"));
        }
    }
}
