//! The console's view beyond approvals ([`OperatorView`]): agents from
//! the gate, grants and the audit trail from the store, the chain
//! verified with the host key.

use std::path::PathBuf;
use std::sync::Arc;

use warden_api::{
    AdminError, AgentSummary, Attribution, AuditEntry, AuditQuery, ChainSummary, Clock,
    GrantSummary, OperatorView, TrustChange,
};
use warden_gate::Gate;
use warden_store::Store;

/// How far back the audit page looks for records matching a filter.
const SCAN: u64 = 5_000;
/// How many trust changes (of all agents) the agents page reads, and how
/// many of them it shows per agent.
const TRUST_CHANGES: u64 = 1_000;
const TRUST_PER_AGENT: usize = 20;

pub(crate) struct Operator {
    pub store: Arc<dyn Store>,
    pub gate: Gate,
    pub clock: Arc<dyn Clock>,
    /// Where the host key is (to check the chain's tags too).
    pub state_dir: PathBuf,
}

fn failed(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> AdminError {
    AdminError::failed(what, e)
}

impl OperatorView for Operator {
    /// The gate's agents, each with its trust history (the changes the
    /// audit trail holds, kept beside it by the store).
    fn agents(&self) -> Result<Vec<AgentSummary>, AdminError> {
        let mut agents = self.gate.agent_summaries();
        let changes = self
            .store
            .trust_changes(TRUST_CHANGES)
            .map_err(|e| failed("reading the trust changes", e))?;
        for record in changes {
            let text = |name: &str| record.event.get(name).and_then(|v| v.as_str());
            let Some(agent) = agents.iter_mut().find(|a| a.name == record.agent) else {
                continue;
            };
            if agent.trust_history.len() < TRUST_PER_AGENT {
                agent.trust_history.push(TrustChange {
                    at_ms: record.at_ms,
                    from: text("from").unwrap_or_default().to_owned(),
                    to: text("to").unwrap_or_default().to_owned(),
                    reason: text("reason").unwrap_or_default().to_owned(),
                    by: record
                        .event
                        .pointer("/by/actor")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned),
                });
            }
        }
        Ok(agents)
    }

    fn grants(&self) -> Result<Vec<GrantSummary>, AdminError> {
        let now = self.clock.now_ms();
        let mut grants: Vec<GrantSummary> = self
            .store
            .all_grants()
            .map_err(|e| failed("reading the grants", e))?
            .into_iter()
            .filter(|(g, revoked)| revoked.is_none() && g.active_at(now))
            .map(|(g, _)| {
                let b = &g.boundary;
                let boundary = [
                    ("paths", &b.paths),
                    ("hosts", &b.hosts),
                    ("branches", &b.branches),
                ]
                .into_iter()
                .filter(|(_, list)| !list.is_empty())
                .map(|(name, list)| format!("{name}: {}", list.join(", ")))
                .collect::<Vec<_>>()
                .join("; ");
                GrantSummary {
                    id: g.id,
                    agent: g.agent,
                    session: g.session,
                    capability: g.capability.to_string(),
                    boundary,
                    goal: g.goal,
                    issuer: g.issuer,
                    valid_to_ms: g.valid_to_ms,
                }
            })
            .collect();
        grants.sort_by_key(|g| g.valid_to_ms);
        Ok(grants)
    }

    fn revoke_grant(&self, id: &str, by: Attribution) -> Result<(), AdminError> {
        self.store
            .revoke_grant(id, &by)
            .map(|_| ())
            .map_err(|e| AdminError::Refused(format!("grant {id} was not revoked: {e}")))
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, AdminError> {
        let records = self
            .store
            .tail(SCAN)
            .map_err(|e| failed("reading the audit trail", e))?;
        Ok(records
            .into_iter()
            .rev()
            .filter(|r| matches(query, &r.event))
            .take(query.limit)
            .map(|r| AuditEntry {
                seq: r.seq,
                at_ms: r.at_ms,
                kind: r.kind,
                event: r.event,
                hash: r.hash,
            })
            .collect())
    }

    fn chain(&self, verify: bool) -> Result<ChainSummary, AdminError> {
        let last = self
            .store
            .tail(1)
            .map_err(|e| failed("reading the audit trail", e))?;
        let (records, head) = last
            .first()
            .map(|r| (r.seq, r.hash.clone()))
            .unwrap_or_default();
        let verified = if verify {
            let key = crate::state::key(&self.state_dir)
                .map_err(|e| failed("reading the host key", e))?;
            Some(
                match self
                    .store
                    .verify_with_host_key(&key)
                    .map_err(|e| failed("verifying the audit chain", e))?
                {
                    Ok(v) => Ok(format!(
                        "{} records, {} signatures and {} tags checked; head {}",
                        v.records, v.signatures, v.tags, v.head
                    )),
                    Err(broken) => Err(broken.to_string()),
                },
            )
        } else {
            None
        };
        Ok(ChainSummary {
            records,
            head,
            verified,
        })
    }
}

/// Whether an audit event matches the query's agent, tool and decision.
fn matches(query: &AuditQuery, event: &serde_json::Value) -> bool {
    let field = |name: &str| event.get(name).and_then(|v| v.as_str());
    let agent_ok = query
        .agent
        .as_deref()
        .is_none_or(|a| field("agent") == Some(a));
    let tool_ok = query.tool.as_deref().is_none_or(|t| {
        field("tool") == Some(t)
            || field("call").is_some_and(|c| c == t || c.starts_with(&format!("{t}(")))
    });
    let decision_ok = query
        .decision
        .as_deref()
        .is_none_or(|d| field("decision") == Some(d));
    agent_ok && tool_ok && decision_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_name_agent_tool_and_decision() {
        let decision = json!({"agent": "ci", "call": "fs_write(/w/a)", "decision": "ask"});
        let outcome = json!({"agent": "ci", "tool": "fs_write", "ok": true});
        let q = |agent: Option<&str>, tool: Option<&str>, decision: Option<&str>| AuditQuery {
            agent: agent.map(Into::into),
            tool: tool.map(Into::into),
            decision: decision.map(Into::into),
            limit: 10,
        };
        assert!(matches(&q(None, None, None), &decision));
        assert!(matches(
            &q(Some("ci"), Some("fs_write"), Some("ask")),
            &decision
        ));
        assert!(matches(&q(None, Some("fs_write"), None), &outcome));
        assert!(!matches(&q(Some("other"), None, None), &decision));
        assert!(!matches(&q(None, Some("fs_writer"), None), &decision));
        assert!(!matches(&q(None, None, Some("deny")), &decision));
        assert!(!matches(&q(None, None, Some("ask")), &outcome));
    }
}
