//! Asking a person about a call the policy asks about, and what their
//! answer does: allow once, add an "always allow" rule (bounded when the
//! person behind the agent's client gave it), deny, or wait.

use warden_api::{
    Answerer, ApprovalAnswer, ApprovalRequest, Approver, Attribution, AuditEvent, CallRequest,
    Envelope, ErrorType, HostCode,
};
use warden_policy::Decision;

use crate::call::Prepared;
use crate::gate::Inner;
use crate::table::Entry;
use crate::{GateError, durable};

/// What a question carries besides the call's own ids and arguments.
pub(crate) struct Asked<'a> {
    pub tool: &'a str,
    pub shown: &'a str,
    pub reason: String,
    pub suggested_rule: String,
    pub always_offered: bool,
}

impl Inner {
    /// The question a person is asked about `request`: every argument, and
    /// a fingerprint binding the answer to them.
    pub(crate) fn question(&self, request: &CallRequest, asked: Asked<'_>) -> ApprovalRequest {
        ApprovalRequest {
            id: String::new(),
            agent: request.context.agent.clone(),
            request_id: request.context.request_id.clone(),
            tool: asked.tool.to_owned(),
            call: asked.shown.to_owned(),
            reason: asked.reason,
            suggested_rule: asked.suggested_rule,
            args_fingerprint: self.fingerprint(&request.args),
            arguments: crate::shown_arguments(&request.args),
            always_offered: asked.always_offered,
        }
    }

    /// Checks and writes down an "always allow" rule before it applies.
    fn persist_rule(
        &self,
        agent: &str,
        rule: &str,
        by: Option<&Attribution>,
    ) -> Result<(), GateError> {
        warden_policy::RuleSet::parse(&[rule.to_owned()], &[], &[]).map_err(|source| {
            GateError::InvalidRule {
                rule: rule.to_owned(),
                source,
            }
        })?;
        match &self.durable.journal {
            Some(journal) => {
                journal
                    .rule_added(agent, rule, None, by)
                    .map_err(|source| GateError::NotRecorded {
                        what: format!("rule `{rule}`"),
                        source,
                    })
            }
            None => Ok(()),
        }
    }

    /// Asks a person; `None` when they allowed the call.
    pub(crate) async fn ask(
        &self,
        approver: &dyn Approver,
        entry: &Entry,
        request: &CallRequest,
        decision: &Decision,
        prepared: &Prepared,
    ) -> Option<Envelope> {
        let call = prepared.call(entry);
        let env = self.env(prepared);
        let agent = &request.context.agent;
        let suggested_rule = decision
            .suggested_rule
            .clone()
            .unwrap_or_else(|| entry.spec.name.to_string());
        let never_always = warden_policy::never_always(&call.tool, decision);
        let question = self.question(
            request,
            Asked {
                tool: entry.spec.name.as_str(),
                shown: &prepared.shown,
                reason: decision.reason.clone(),
                suggested_rule: suggested_rule.clone(),
                always_offered: never_always.is_none(),
            },
        );
        match approver.ask(question).await {
            ApprovalAnswer::AllowOnce => {
                tracing::info!("approved once");
                None
            }
            ApprovalAnswer::AlwaysAllow { rule, by } => {
                let operator = match by {
                    Answerer::Operator(who) => Some(who),
                    Answerer::Client => {
                        let refusal = never_always.or_else(|| {
                            self.agents
                                .with(agent, |p| {
                                    p.client_rule_refusal(&call, &env, &suggested_rule, &rule)
                                })
                                .flatten()
                        });
                        if let Some(why) = refusal {
                            tracing::warn!(%rule, %why, "a client's always-allow rule was refused");
                            return Some(self.refused_response(
                                request,
                                &prepared.shown,
                                None,
                                &why,
                            ));
                        }
                        None
                    }
                };
                let added = self
                    .persist_rule(agent, &rule, operator.as_ref())
                    .and_then(|()| self.agents.add_allow_rule(agent, &rule));
                match added {
                    Ok(()) => {
                        tracing::info!(%rule, by = ?operator.as_ref().map(|o| &o.actor), "approved; rule added");
                        None
                    }
                    Err(e) => Some(Envelope::host(
                        ErrorType::PermissionDenied,
                        HostCode::ApprovalInvalidRule,
                        format!(
                            "the approval's rule `{rule}` is not valid ({e}); the call was not run"
                        ),
                    )),
                }
            }
            ApprovalAnswer::Deny { reason } => Some(Envelope::host(
                ErrorType::PermissionDenied,
                HostCode::ApprovalDenied,
                format!("{} — {reason}", decision.reason),
            )),
            ApprovalAnswer::Pending { id } => Some(pending_envelope(&decision.reason, &id)),
            ApprovalAnswer::Refused { id, reason } => {
                Some(self.refused_response(request, &prepared.shown, id.as_deref(), &reason))
            }
        }
    }

    /// An answer that came with the call and was not accepted: audited,
    /// and reported to the agent; the ask (if any) keeps waiting.
    pub(crate) fn refused_response(
        &self,
        request: &CallRequest,
        shown: &str,
        id: Option<&str>,
        reason: &str,
    ) -> Envelope {
        let c = &request.context;
        let event = AuditEvent::ResponseRefused {
            agent: c.agent.clone(),
            session: c.session.clone(),
            request_id: c.request_id.clone(),
            call: shown.to_owned(),
            approval: id.map(str::to_owned),
            reason: reason.to_owned(),
        };
        if let Some(refusal) = durable::audit(self.durable.journal.as_ref(), &event) {
            return refusal;
        }
        let waiting = match id {
            Some(id) => format!("; approval {id} still waits for a person"),
            None => String::new(),
        };
        Envelope::host(
            ErrorType::PermissionDenied,
            HostCode::ApprovalResponseRefused,
            format!(
                "the answer sent with this call was refused: {reason}; the call was not run{waiting}"
            ),
        )
    }
}

/// The envelope of a call that waits for a person's approval `id`.
pub fn pending_envelope(reason: &str, id: &str) -> Envelope {
    Envelope::host(
        ErrorType::PermissionDenied,
        HostCode::ApprovalPending,
        format!(
            "{reason} — waiting for a person's approval {id}: ask them to answer it \
             (`warden approvals approve {id}`, or `warden approvals deny {id}`), then retry the same call"
        ),
    )
}
