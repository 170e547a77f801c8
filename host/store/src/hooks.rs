//! The gate's durable hooks ([`Journal`], [`ApprovalLedger`]) on any
//! [`Store`]: what the gate writes through, without knowing the database.

use std::sync::Arc;

use warden_api::{
    ApprovalAnswer, ApprovalLedger, ApprovalRequest, Attribution, AuditEvent, BoxFuture, Journal,
    JournalError, OpenApproval,
};

use crate::Store;
use crate::interface::Closed;

/// A [`Store`] as the gate's journal and approvals ledger.
#[derive(Debug, Clone)]
pub struct Hooks(pub Arc<dyn Store>);

fn failed(what: &'static str) -> impl FnOnce(crate::StoreError) -> JournalError {
    move |e| JournalError::with_source(what, e)
}

impl Journal for Hooks {
    fn rule_added(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), JournalError> {
        self.0
            .add_rule(agent, rule, approval, by)
            .map_err(failed("recording a rule"))
    }

    fn audit(&self, event: &AuditEvent) -> Result<(), JournalError> {
        self.0
            .append(event)
            .map(|_| ())
            .map_err(failed("appending to the audit log"))
    }

    fn audit_async<'a>(
        &'a self,
        event: &'a AuditEvent,
    ) -> BoxFuture<'a, Result<bool, JournalError>> {
        Box::pin(async move {
            self.0
                .append_durable(event)
                .await
                .map_err(failed("appending to the audit log"))
        })
    }

    fn audit_later(&self, event: &AuditEvent) -> Result<bool, JournalError> {
        self.0
            .append_later(event)
            .map_err(failed("appending to the audit log"))
    }

    fn flush_async(&self) -> BoxFuture<'_, Result<(), JournalError>> {
        Box::pin(async move {
            self.0
                .flush_appends()
                .await
                .map_err(failed("committing queued audit records"))
        })
    }

    fn audit_args(&self) -> bool {
        self.0.audit_args()
    }

    fn seal(&self) -> Result<(), JournalError> {
        self.0
            .seal()
            .map(|_| ())
            .map_err(failed("signing the audit chain's head"))
    }
}

impl ApprovalLedger for Hooks {
    fn asked(&self, approval: &OpenApproval) -> Result<String, JournalError> {
        self.0
            .approval_asked(approval)
            .map_err(failed("recording an approval"))
    }

    fn answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), JournalError> {
        self.0
            .approval_answered(request, answer, by, at_ms)
            .map_err(failed("the approvals ledger"))
    }

    fn consumed(&self, id: &str, at_ms: u64) -> Result<bool, JournalError> {
        self.0
            .approval_closed(id, Closed::Consumed, at_ms)
            .map_err(failed("the approvals ledger"))
    }

    fn dropped(&self, id: &str, at_ms: u64) -> Result<(), JournalError> {
        self.0
            .approval_closed(id, Closed::Dropped, at_ms)
            .map(|_| ())
            .map_err(failed("the approvals ledger"))
    }

    fn open(&self) -> Result<Vec<OpenApproval>, JournalError> {
        self.0
            .open_approvals()
            .map_err(failed("the approvals ledger"))
    }

    fn get(&self, id: &str) -> Result<Option<OpenApproval>, JournalError> {
        self.0
            .open_approval(id)
            .map_err(failed("the approvals ledger"))
    }

    fn by_key(&self, key: &str) -> Result<Option<OpenApproval>, JournalError> {
        self.0
            .open_approval_by_key(key)
            .map_err(failed("the approvals ledger"))
    }
}
