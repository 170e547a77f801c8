//! The gate's durable hooks: where decisions, outcomes and added rules are
//! written (a [`Journal`]), where capability grants are kept, and the
//! clock everything time-boxed is judged by (grants, approvals, trust).
//! All optional; without them the gate keeps nothing and consults no
//! grants.

use std::sync::Arc;
use std::time::Duration;

use warden_api::{AuditEvent, CallRequest, Envelope, ErrorType, HostCode, Journal, JournalError};
use warden_policy::{CapabilityGrant, Decision, GrantSet};

/// Where capability grants are kept: the set in force now (asked on every
/// decision; implementations cache it and rebuild it when grants change)
/// and new grants (from `request_capability`).
pub trait GrantStore: Send + Sync {
    fn current(&self) -> Arc<GrantSet>;
    /// Records `grant` (its id is filled in) and audits it; the recorded
    /// grant is returned. An error means nothing was granted.
    fn issue(&self, grant: CapabilityGrant) -> Result<CapabilityGrant, JournalError>;
}

pub use warden_api::{Clock, SystemClock};

impl crate::gate::Inner {
    /// Reports that the caller of `request` asked for `what`, which no
    /// tool offers; a failure is logged, the agent's answer stays.
    pub(crate) fn unfulfilled(&self, request: &CallRequest, what: warden_api::Unfulfilled) {
        let Some(gaps) = &self.durable.gaps else {
            return;
        };
        let c = &request.context;
        if let Err(e) = gaps.unfulfilled(&c.agent, &c.session, &what) {
            tracing::warn!(error = %e, asked = what.name(), "recording a capability gap failed");
        }
    }
}

pub(crate) fn decision_event(
    request: &CallRequest,
    shown: &str,
    decision: &Decision,
    with_args: bool,
) -> AuditEvent {
    let c = &request.context;
    AuditEvent::Decision {
        agent: c.agent.clone(),
        session: c.session.clone(),
        request_id: c.request_id.clone(),
        call: shown.to_owned(),
        decision: format!("{:?}", decision.decision).to_ascii_lowercase(),
        reason: decision.reason.clone(),
        rule: decision.rule.clone(),
        layer: serde_json::to_value(decision.layer)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        grant: decision.grant.clone(),
        args_digest: warden_signing::sha256_digest(request.args.to_string().as_bytes()),
        args: with_args.then(|| request.args.clone()),
        principal: c.principal.clone(),
    }
}

pub(crate) fn outcome_event(
    request: &CallRequest,
    tool: &str,
    envelope: &Envelope,
    took: Duration,
) -> AuditEvent {
    let c = &request.context;
    let (error_type, domain_code) = match envelope {
        Envelope::Ok { .. } => (None, None),
        Envelope::Forwarded { .. } if envelope.is_ok() => (None, None),
        Envelope::Forwarded { .. } => (
            Some(ErrorType::ToolError),
            Some("upstream_error".to_owned()),
        ),
        Envelope::Error {
            error_type,
            domain_code,
            ..
        } => (Some(*error_type), Some(domain_code.clone())),
    };
    AuditEvent::Outcome {
        agent: c.agent.clone(),
        session: c.session.clone(),
        request_id: c.request_id.clone(),
        tool: tool.to_owned(),
        ok: envelope.is_ok(),
        duration_us: u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        limit_hit: error_type == Some(ErrorType::LimitExceeded),
        error_type: error_type.map(|e| e.to_string()),
        domain_code,
        principal: c.principal.clone(),
    }
}

/// Appends `event`; on failure the call must not go on (nothing runs
/// unaudited).
pub(crate) fn audit(journal: Option<&Arc<dyn Journal>>, event: &AuditEvent) -> Option<Envelope> {
    refusal(journal?.audit(event))
}

/// [`audit`] on the call path, waiting for a shared commit without
/// holding the thread (or, where the journal keeps a pending log, for
/// the record to be durable there, with its commit arranged).
pub(crate) async fn audit_async(
    journal: Option<&Arc<dyn Journal>>,
    event: &AuditEvent,
) -> Option<Envelope> {
    let journal = journal?;
    match journal.audit_async(event).await {
        Ok(true) => arrange_flush(journal).await,
        Ok(false) => {}
        Err(e) => return refusal(Err(e)),
    }
    None
}

/// How long a record appended with [`audit_later`] (or kept pending by
/// [`audit_async`]) may wait for another commit to ride before one is
/// made for it: back-to-back calls share commits, and a killed host
/// loses at most this long's outcome records where the journal keeps no
/// pending log (none where it does).
pub const OUTCOME_LINGER: Duration = Duration::from_millis(5);

/// A record no answer waits on (a call's outcome): queued for the next
/// commit, and committed within [`OUTCOME_LINGER`] if no other commit
/// takes it. A failure is logged: the call's result stands, but the
/// operator must know the trail has a gap.
pub(crate) async fn audit_later(journal: Option<&Arc<dyn Journal>>, event: &AuditEvent) {
    let Some(journal) = journal else {
        return;
    };
    match journal.audit_later(event) {
        Ok(false) => {}
        Ok(true) => arrange_flush(journal).await,
        Err(e) => flushed(Err(e)),
    }
}

/// Commits what `journal` queued after [`OUTCOME_LINGER`] (at once when
/// there is no runtime to wait on).
async fn arrange_flush(journal: &Arc<dyn Journal>) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            let journal = Arc::clone(journal);
            runtime.spawn(async move {
                tokio::time::sleep(OUTCOME_LINGER).await;
                flushed(journal.flush_async().await);
            });
        }
        Err(_) => flushed(journal.flush_async().await),
    }
}

fn flushed(result: Result<(), JournalError>) {
    if let Err(e) = result {
        tracing::error!(error = %e, "committing queued audit records failed");
    }
}

fn refusal(appended: Result<(), warden_api::JournalError>) -> Option<Envelope> {
    match appended {
        Ok(()) => None,
        Err(e) => {
            tracing::error!(error = %e, "audit append failed");
            Some(Envelope::host(
                ErrorType::HostError,
                HostCode::AuditUnavailable,
                format!("the host could not write its audit log ({e}); the call was not run"),
            ))
        }
    }
}
