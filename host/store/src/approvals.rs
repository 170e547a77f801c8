//! The approvals book's ledger: pending and answered approvals survive a
//! restart, and an answer once used is marked so it is never used again.

use rusqlite::params;
use warden_api::{
    ApprovalAnswer, ApprovalLedger, ApprovalRequest, AuditEvent, JournalError, OpenApproval,
};

use crate::{Store, StoreError};

fn journal(e: StoreError) -> JournalError {
    JournalError::with_source("the approvals ledger", e)
}

impl Store {
    fn close(&self, id: &str, state: &str, at_ms: u64) -> Result<(), StoreError> {
        let conn = self.conn();
        conn.execute(
            "UPDATE approvals SET state = ?2, closed_ms = ?3 WHERE id = ?1 AND state = 'answered'",
            params![id, state, at_ms as i64],
        )
        .map_err(StoreError::sql("closing an approval"))?;
        Ok(())
    }

    /// Every approval, newest first, for operators.
    pub fn open_approvals(&self) -> Result<Vec<OpenApproval>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT request, call_key, asked_ms, answer, answered_ms FROM approvals \
                 WHERE state IN ('pending', 'answered') ORDER BY asked_ms, rowid",
            )
            .map_err(StoreError::sql("reading approvals"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            })
            .map_err(StoreError::sql("reading approvals"))?;
        let mut out = Vec::new();
        for row in rows {
            let (request, key, asked, answer, answered) =
                row.map_err(StoreError::sql("reading approvals"))?;
            let request: ApprovalRequest =
                serde_json::from_str(&request).map_err(StoreError::data("reading approvals"))?;
            let answer = match (answer, answered) {
                (Some(a), Some(at)) => Some((
                    serde_json::from_str::<ApprovalAnswer>(&a)
                        .map_err(StoreError::data("reading approvals"))?,
                    at as u64,
                )),
                _ => None,
            };
            out.push(OpenApproval {
                request,
                key,
                asked_ms: asked as u64,
                answer,
            });
        }
        Ok(out)
    }
}

impl ApprovalLedger for Store {
    fn asked(&self, approval: &OpenApproval) -> Result<(), JournalError> {
        let request = serde_json::to_string(&approval.request)
            .map_err(|e| JournalError::with_source("encoding an approval", e))?;
        self.conn()
            .execute(
                "INSERT INTO approvals (id, agent, request, call_key, asked_ms, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
                params![
                    approval.request.id,
                    approval.request.agent,
                    request,
                    approval.key,
                    approval.asked_ms as i64
                ],
            )
            .map_err(|e| JournalError::with_source("recording an approval", e))?;
        Ok(())
    }

    fn answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), JournalError> {
        let text = serde_json::to_string(answer)
            .map_err(|e| JournalError::with_source("encoding an answer", e))?;
        let mut conn = self.conn();
        let run = |conn: &mut rusqlite::Connection| -> Result<(), StoreError> {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(StoreError::sql("answering an approval"))?;
            let changed = tx
                .execute(
                    "UPDATE approvals SET state = 'answered', answer = ?2, answered_ms = ?3 \
                     WHERE id = ?1 AND state = 'pending'",
                    params![request.id, text, at_ms as i64],
                )
                .map_err(StoreError::sql("answering an approval"))?;
            if changed == 0 {
                return Err(StoreError::Data {
                    operation: "answering an approval",
                    detail: format!("approval `{}` is not pending", request.id),
                });
            }
            let event = AuditEvent::Approval {
                id: request.id.clone(),
                agent: request.agent.clone(),
                call: request.call.clone(),
                answer: answer.clone(),
                by: by.to_owned(),
            };
            self.audit_in(&tx, [&event], at_ms)?;
            tx.commit()
                .map_err(StoreError::sql("answering an approval"))
        };
        run(&mut conn).map_err(journal)
    }

    fn consumed(&self, id: &str, at_ms: u64) -> Result<(), JournalError> {
        self.close(id, "consumed", at_ms).map_err(journal)
    }

    fn dropped(&self, id: &str, at_ms: u64) -> Result<(), JournalError> {
        self.close(id, "dropped", at_ms).map_err(journal)
    }

    fn open(&self) -> Result<Vec<OpenApproval>, JournalError> {
        self.open_approvals().map_err(journal)
    }

    fn highest_id(&self) -> Result<u64, JournalError> {
        let n: i64 = self
            .conn()
            .query_row(
                "SELECT coalesce(max(CAST(substr(id, 4) AS INTEGER)), 0) FROM approvals WHERE id LIKE 'ap-%'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| JournalError::with_source("reading approval ids", e))?;
        Ok(n.max(0) as u64)
    }
}
