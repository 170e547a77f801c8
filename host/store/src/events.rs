//! The audit events of the store's own changes, the same for every
//! backend.

use warden_api::{ApprovalAnswer, ApprovalRequest, Attribution, AuditEvent};
use warden_policy::CapabilityGrant;

pub(crate) fn approval(request: &ApprovalRequest, answer: &ApprovalAnswer, by: &str) -> AuditEvent {
    AuditEvent::Approval {
        id: request.id.clone(),
        agent: request.agent.clone(),
        call: request.call.clone(),
        answer: answer.clone(),
        by: by.to_owned(),
    }
}

pub(crate) fn rule_added(
    agent: &str,
    rule: &str,
    approval: Option<&str>,
    by: Option<&Attribution>,
) -> AuditEvent {
    AuditEvent::RuleAdded {
        agent: agent.to_owned(),
        rule: rule.to_owned(),
        approval: approval.map(str::to_owned),
        by: by.cloned(),
    }
}

pub(crate) fn grant_issued(grant: &CapabilityGrant, by: Option<&Attribution>) -> AuditEvent {
    AuditEvent::Grant {
        action: "issued".to_owned(),
        id: grant.id.clone(),
        agent: grant.agent.clone(),
        capability: grant.capability.to_string(),
        issuer: grant.issuer.clone(),
        by: by.cloned(),
    }
}

/// A revocation names who revoked as the issuer of the change.
pub(crate) fn grant_revoked(grant: &CapabilityGrant, by: &Attribution) -> AuditEvent {
    AuditEvent::Grant {
        action: "revoked".to_owned(),
        id: grant.id.clone(),
        agent: grant.agent.clone(),
        capability: grant.capability.to_string(),
        issuer: by.actor.clone(),
        by: Some(by.clone()),
    }
}
