//! The codes the host itself puts in error envelopes. A tool's own codes
//! (`ErrorType::ToolError`) are the tool's strings; everything the call
//! path, the runtime and the capability desk say is one of these, so the
//! MCP layer and tests match on a type, not on text.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Envelope, ErrorType};

/// A host domain code (`domain_code` of an error envelope the host made).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostCode {
    /// The call waits for a person's approval (the message names its id).
    ApprovalPending,
    /// A person denied the call.
    ApprovalDenied,
    /// An answer sent with the call was refused.
    ApprovalResponseRefused,
    /// A person's "always allow" rule was not valid.
    ApprovalInvalidRule,
    /// The call is malformed (a NUL byte in a path, ...).
    InvalidPath,
    DeniedByCategory,
    DeniedByConstraint,
    DeniedByRule,
    DeniedByMode,
    DeniedByGrant,
    /// A circuit breaker asked and nobody allowed it.
    CircuitBreaker,
    /// No such tool (or resource).
    NotFound,
    /// The arguments do not match the schema.
    InvalidArgument,
    /// The audit log could not be written; nothing ran.
    AuditUnavailable,
    HostPanic,
    BatchClosed,
    /// A capability request no grant could serve.
    GrantNotPossible,
    GrantNotRecorded,
    GrantDenied,
    /// Capability requests are not offered by this host.
    GrantUnavailable,
    MemoryLimit,
    DeadlineExceeded,
    OutputLimit,
    GuestPanic,
    GuestTrap,
    InvalidResult,
    RuntimeClosed,
    /// A bridged tool whose definition changed since an operator approved
    /// it (quarantined until approved again).
    DefinitionChanged,
    /// A bridged tool no operator approved yet.
    NotApproved,
    /// An external MCP server could not be reached or went away mid-call.
    UpstreamUnavailable,
}

impl HostCode {
    pub fn as_str(self) -> &'static str {
        match self {
            HostCode::ApprovalPending => "approval_pending",
            HostCode::ApprovalDenied => "approval_denied",
            HostCode::ApprovalResponseRefused => "approval_response_refused",
            HostCode::ApprovalInvalidRule => "approval_invalid_rule",
            HostCode::InvalidPath => "invalid_path",
            HostCode::DeniedByCategory => "denied_by_category",
            HostCode::DeniedByConstraint => "denied_by_constraint",
            HostCode::DeniedByRule => "denied_by_rule",
            HostCode::DeniedByMode => "denied_by_mode",
            HostCode::DeniedByGrant => "denied_by_grant",
            HostCode::CircuitBreaker => "circuit_breaker",
            HostCode::NotFound => "not_found",
            HostCode::InvalidArgument => "invalid_argument",
            HostCode::AuditUnavailable => "audit_unavailable",
            HostCode::HostPanic => "host_panic",
            HostCode::BatchClosed => "batch_closed",
            HostCode::GrantNotPossible => "grant_not_possible",
            HostCode::GrantNotRecorded => "grant_not_recorded",
            HostCode::GrantDenied => "grant_denied",
            HostCode::GrantUnavailable => "grant_unavailable",
            HostCode::MemoryLimit => "memory_limit",
            HostCode::DeadlineExceeded => "deadline_exceeded",
            HostCode::OutputLimit => "output_limit",
            HostCode::GuestPanic => "guest_panic",
            HostCode::GuestTrap => "guest_trap",
            HostCode::InvalidResult => "invalid_result",
            HostCode::RuntimeClosed => "runtime_closed",
            HostCode::DefinitionChanged => "definition_changed",
            HostCode::NotApproved => "not_approved",
            HostCode::UpstreamUnavailable => "upstream_unavailable",
        }
    }

    const ALL: [HostCode; 30] = [
        HostCode::ApprovalPending,
        HostCode::ApprovalDenied,
        HostCode::ApprovalResponseRefused,
        HostCode::ApprovalInvalidRule,
        HostCode::InvalidPath,
        HostCode::DeniedByCategory,
        HostCode::DeniedByConstraint,
        HostCode::DeniedByRule,
        HostCode::DeniedByMode,
        HostCode::DeniedByGrant,
        HostCode::CircuitBreaker,
        HostCode::NotFound,
        HostCode::InvalidArgument,
        HostCode::AuditUnavailable,
        HostCode::HostPanic,
        HostCode::BatchClosed,
        HostCode::GrantNotPossible,
        HostCode::GrantNotRecorded,
        HostCode::GrantDenied,
        HostCode::GrantUnavailable,
        HostCode::MemoryLimit,
        HostCode::DeadlineExceeded,
        HostCode::OutputLimit,
        HostCode::GuestPanic,
        HostCode::GuestTrap,
        HostCode::InvalidResult,
        HostCode::RuntimeClosed,
        HostCode::DefinitionChanged,
        HostCode::NotApproved,
        HostCode::UpstreamUnavailable,
    ];
}

impl fmt::Display for HostCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Not one of the host's codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a host domain code")]
pub struct UnknownHostCode(pub String);

impl FromStr for HostCode {
    type Err = UnknownHostCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostCode::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownHostCode(s.to_owned()))
    }
}

impl Envelope {
    /// An error envelope the host made, with one of its codes.
    pub fn host(error_type: ErrorType, code: HostCode, message: impl Into<String>) -> Envelope {
        Envelope::error(error_type, code.as_str(), message)
    }

    /// The host's code of this envelope: `None` for a success and for a
    /// tool's own error (whose code is the tool's, whatever its text).
    pub fn host_code(&self) -> Option<HostCode> {
        match self {
            Envelope::Error {
                error_type,
                domain_code,
                ..
            } if *error_type != ErrorType::ToolError => domain_code.parse().ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_a_tool_cannot_claim_one() {
        for code in HostCode::ALL {
            assert_eq!(code.as_str().parse::<HostCode>(), Ok(code));
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().into()));
        }
        let host = Envelope::host(ErrorType::PermissionDenied, HostCode::ApprovalPending, "x");
        assert_eq!(host.host_code(), Some(HostCode::ApprovalPending));
        // A tool that returns the same text is still the tool's code.
        let tool = Envelope::error(ErrorType::ToolError, "approval_pending", "x");
        assert_eq!(tool.host_code(), None);
    }
}
