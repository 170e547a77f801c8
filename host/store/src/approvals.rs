//! The approvals book's ledger: pending and answered approvals survive a
//! restart, and an answer once used is marked so it is never used again.

use rusqlite::params;
use warden_api::{ApprovalAnswer, ApprovalRequest, OpenApproval};

use crate::{SqliteStore, StoreError};

/// The number after the highest `N` of any id `ap-N` recorded.
const NEXT_ID: &str = "SELECT coalesce(max(CAST(substr(id, 4) AS INTEGER)), 0) + 1 FROM approvals \
                       WHERE id LIKE 'ap-%'";

impl SqliteStore {
    /// Closes the answered approval `id`; true when it was answered.
    pub(crate) fn close(&self, id: &str, state: &str, at_ms: u64) -> Result<bool, StoreError> {
        let conn = self.conn();
        let closed = conn
            .execute(
                "UPDATE approvals SET state = ?2, closed_ms = ?3 WHERE id = ?1 AND state = 'answered'",
                params![id, state, at_ms as i64],
            )
            .map_err(StoreError::sql("closing an approval"))?;
        Ok(closed > 0)
    }

    /// Approvals waiting for an answer or for a retry, oldest first.
    pub fn open_approvals(&self) -> Result<Vec<OpenApproval>, StoreError> {
        self.open_approvals_where(None, None)
    }

    /// [`SqliteStore::open_approvals`], only `id` and only those of the
    /// call bound by `key`, if given.
    pub(crate) fn open_approvals_where(
        &self,
        id: Option<&str>,
        key: Option<&str>,
    ) -> Result<Vec<OpenApproval>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT request, call_key, asked_ms, answer, answered_ms FROM approvals \
                 WHERE state IN ('pending', 'answered') AND (?1 IS NULL OR id = ?1) \
                 AND (?2 IS NULL OR call_key = ?2) ORDER BY asked_ms, rowid",
            )
            .map_err(StoreError::sql("reading approvals"))?;
        let rows = stmt
            .query_map(params![id, key], |r| {
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

impl SqliteStore {
    /// Records `approval` under the next id `ap-N`, numbered inside the
    /// write transaction so two processes never take the same one.
    pub(crate) fn asked(&self, approval: &OpenApproval) -> Result<String, StoreError> {
        let conn = self.conn();
        crate::tx::write(&conn, "recording an approval", |conn| {
            let next: i64 = conn
                .prepare_cached(NEXT_ID)
                .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
                .map_err(StoreError::sql("recording an approval"))?;
            let mut request = approval.request.clone();
            request.id = format!("ap-{next}");
            let text = serde_json::to_string(&request)
                .map_err(StoreError::data("recording an approval"))?;
            conn.prepare_cached(
                "INSERT INTO approvals (id, agent, request, call_key, asked_ms, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    request.id,
                    request.agent,
                    text,
                    approval.key,
                    approval.asked_ms as i64
                ])
            })
            .map_err(StoreError::sql("recording an approval"))?;
            Ok(request.id)
        })
    }

    pub(crate) fn answered(
        &self,
        request: &ApprovalRequest,
        answer: &ApprovalAnswer,
        by: &str,
        at_ms: u64,
    ) -> Result<(), StoreError> {
        let text =
            serde_json::to_string(answer).map_err(StoreError::data("answering an approval"))?;
        let mut conn = self.conn();
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
            return Err(StoreError::NotPending(request.id.clone()));
        }
        self.audit_in(&tx, [&crate::events::approval(request, answer, by)], at_ms)?;
        tx.commit()
            .map_err(StoreError::sql("answering an approval"))
    }
}
