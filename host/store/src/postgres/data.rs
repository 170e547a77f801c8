//! Rules, approvals, grants and trust in PostgreSQL: the same meaning as
//! the SQLite files of the same names, each change one transaction with
//! its audit records (`audit::append_in`).

use std::sync::Arc;

use sqlx::Row;
use warden_api::{ApprovalAnswer, ApprovalRequest, Attribution, AuditEvent, OpenApproval};
use warden_policy::CapabilityGrant;

use super::{Inner, audit};
use crate::chain::Entry;
use crate::db::ms;
use crate::{StoreError, StoredRule, StoredTrust, now_ms};

/// The entries of `events`, all at `at_ms`.
fn entries<'e>(
    events: impl IntoIterator<Item = &'e AuditEvent>,
    at_ms: u64,
) -> Result<Vec<Entry>, StoreError> {
    events
        .into_iter()
        .map(|event| Entry::new(event, at_ms))
        .collect()
}

/// Text stored as bytes (`BYTEA`).
pub(super) fn text(bytes: Vec<u8>) -> Result<String, sqlx::Error> {
    String::from_utf8(bytes).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

pub(crate) async fn add_rule(
    inner: Arc<Inner>,
    agent: String,
    rule: String,
    approval: Option<String>,
    by: Option<Attribution>,
) -> Result<(), StoreError> {
    let failed = StoreError::pg("adding a rule");
    let now = now_ms();
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let added = sqlx::query(
        "INSERT INTO rules (agent, rule, approval, added_ms) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (agent, rule) DO NOTHING",
    )
    .bind(&agent)
    .bind(rule.as_bytes())
    .bind(&approval)
    .bind(ms(now))
    .execute(&mut *tx)
    .await
    .map_err(StoreError::pg("adding a rule"))?
    .rows_affected();
    if added > 0 {
        let event = crate::events::rule_added(&agent, &rule, approval.as_deref(), by.as_ref());
        audit::append_in(&mut tx, &inner, &entries([&event], now)?).await?;
    }
    tx.commit().await.map_err(StoreError::pg("adding a rule"))
}

pub(crate) async fn rules(inner: Arc<Inner>) -> Result<Vec<StoredRule>, StoreError> {
    sqlx::query("SELECT agent, rule, approval, added_ms FROM rules ORDER BY id")
        .fetch_all(&inner.pool)
        .await
        .and_then(|rows| {
            rows.iter()
                .map(|r| {
                    Ok(StoredRule {
                        agent: r.try_get(0)?,
                        rule: text(r.try_get(1)?)?,
                        approval: r.try_get(2)?,
                        added_ms: r.try_get::<i64, _>(3)? as u64,
                    })
                })
                .collect()
        })
        .map_err(StoreError::pg("reading rules"))
}

/// Records `approval` under the next id `ap-N` of a sequence all
/// replicas share.
pub(crate) async fn approval_asked(
    inner: Arc<Inner>,
    approval: OpenApproval,
) -> Result<String, StoreError> {
    let failed = StoreError::pg("recording an approval");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let next: i64 = sqlx::query("SELECT nextval('approval_ids')")
        .fetch_one(&mut *tx)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(StoreError::pg("recording an approval"))?;
    let mut request = approval.request;
    request.id = format!("ap-{next}");
    let text =
        serde_json::to_string(&request).map_err(StoreError::data("recording an approval"))?;
    sqlx::query(
        "INSERT INTO approvals (id, agent, request, call_key, asked_ms, state) \
         VALUES ($1, $2, $3, $4, $5, 'pending')",
    )
    .bind(&request.id)
    .bind(&request.agent)
    .bind(text)
    .bind(approval.key.as_bytes())
    .bind(ms(approval.asked_ms))
    .execute(&mut *tx)
    .await
    .map_err(StoreError::pg("recording an approval"))?;
    tx.commit()
        .await
        .map_err(StoreError::pg("recording an approval"))?;
    Ok(request.id)
}

pub(crate) async fn approval_answered(
    inner: Arc<Inner>,
    request: ApprovalRequest,
    answer: ApprovalAnswer,
    by: String,
    at_ms: u64,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(&answer).map_err(StoreError::data("answering an approval"))?;
    let failed = StoreError::pg("answering an approval");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let changed = sqlx::query(
        "UPDATE approvals SET state = 'answered', answer = $2, answered_ms = $3 \
         WHERE id = $1 AND state = 'pending'",
    )
    .bind(&request.id)
    .bind(text)
    .bind(ms(at_ms))
    .execute(&mut *tx)
    .await
    .map_err(StoreError::pg("answering an approval"))?
    .rows_affected();
    if changed == 0 {
        return Err(StoreError::NotPending(request.id.clone()));
    }
    let event = crate::events::approval(&request, &answer, &by);
    audit::append_in(&mut tx, &inner, &entries([&event], at_ms)?).await?;
    tx.commit()
        .await
        .map_err(StoreError::pg("answering an approval"))
}

pub(crate) async fn approval_closed(
    inner: Arc<Inner>,
    id: String,
    state: &'static str,
    at_ms: u64,
) -> Result<bool, StoreError> {
    let closed = sqlx::query(
        "UPDATE approvals SET state = $2, closed_ms = $3 WHERE id = $1 AND state = 'answered'",
    )
    .bind(id)
    .bind(state)
    .bind(ms(at_ms))
    .execute(&inner.pool)
    .await
    .map_err(StoreError::pg("closing an approval"))?
    .rows_affected();
    Ok(closed > 0)
}

/// Approvals waiting for an answer or a retry (only `id`, and only those
/// of the call bound by `key`, if given).
pub(crate) async fn open_approvals(
    inner: Arc<Inner>,
    id: Option<String>,
    key: Option<Vec<u8>>,
) -> Result<Vec<OpenApproval>, StoreError> {
    let rows = sqlx::query(
        "SELECT request, call_key, asked_ms, answer, answered_ms FROM approvals \
         WHERE state IN ('pending', 'answered') AND ($1::text IS NULL OR id = $1) \
         AND ($2::bytea IS NULL OR call_key = $2) ORDER BY asked_ms, n",
    )
    .bind(id)
    .bind(key)
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg("reading approvals"))?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let read = StoreError::pg("reading approvals");
        let (request, key, asked, answer, answered): (
            String,
            Vec<u8>,
            i64,
            Option<String>,
            Option<i64>,
        ) = (|| {
            Ok::<_, sqlx::Error>((
                r.try_get(0)?,
                r.try_get(1)?,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
            ))
        })()
        .map_err(read)?;
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
            key: text(key).map_err(StoreError::pg("reading approvals"))?,
            asked_ms: asked as u64,
            answer,
        });
    }
    Ok(out)
}

pub(crate) async fn issue_grant(
    inner: Arc<Inner>,
    mut grant: CapabilityGrant,
    by: Option<Attribution>,
) -> Result<CapabilityGrant, StoreError> {
    let failed = StoreError::pg("issuing a grant");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let next: i64 = sqlx::query("SELECT nextval('grant_ids')")
        .fetch_one(&mut *tx)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(StoreError::pg("issuing a grant"))?;
    grant.id = format!("g-{next}");
    let json = serde_json::to_string(&grant).map_err(StoreError::data("issuing a grant"))?;
    sqlx::query(
        "INSERT INTO grants (n, id, agent, grant_json, valid_to_ms) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(next)
    .bind(&grant.id)
    .bind(&grant.agent)
    .bind(json)
    .bind(ms(grant.valid_to_ms))
    .execute(&mut *tx)
    .await
    .map_err(StoreError::pg("issuing a grant"))?;
    let event = crate::events::grant_issued(&grant, by.as_ref());
    audit::append_in(&mut tx, &inner, &entries([&event], now_ms())?).await?;
    grants_moved(&mut tx).await?;
    tx.commit()
        .await
        .map_err(StoreError::pg("issuing a grant"))?;
    Ok(grant)
}

pub(crate) async fn revoke_grant(
    inner: Arc<Inner>,
    id: String,
    by: Attribution,
) -> Result<CapabilityGrant, StoreError> {
    let failed = StoreError::pg("revoking a grant");
    let now = now_ms();
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let json: Option<String> = sqlx::query(
        "SELECT grant_json FROM grants WHERE id = $1 AND revoked_ms IS NULL FOR UPDATE",
    )
    .bind(&id)
    .fetch_optional(&mut *tx)
    .await
    .and_then(|r| r.map(|r| r.try_get(0)).transpose())
    .map_err(StoreError::pg("revoking a grant"))?;
    let Some(json) = json else {
        return Err(StoreError::NoSuchGrant(id));
    };
    let grant: CapabilityGrant =
        serde_json::from_str(&json).map_err(StoreError::data("revoking a grant"))?;
    sqlx::query("UPDATE grants SET revoked_ms = $2, revoked_by = $3 WHERE id = $1")
        .bind(&id)
        .bind(ms(now))
        .bind(&by.actor)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg("revoking a grant"))?;
    let event = crate::events::grant_revoked(&grant, &by);
    audit::append_in(&mut tx, &inner, &entries([&event], now)?).await?;
    grants_moved(&mut tx).await?;
    tx.commit()
        .await
        .map_err(StoreError::pg("revoking a grant"))?;
    Ok(grant)
}

/// Moves the grant epoch in the transaction that changes grants: every
/// replica reading it after the commit sees the change.
async fn grants_moved(conn: &mut sqlx::PgConnection) -> Result<(), StoreError> {
    sqlx::query("UPDATE grant_epoch SET epoch = epoch + 1")
        .execute(&mut *conn)
        .await
        .map_err(StoreError::pg("recording a grant change"))?;
    Ok(())
}

/// Where the grants stand: moved by every committed grant change, on any
/// replica.
pub(crate) async fn grant_epoch(inner: Arc<Inner>) -> Result<u64, StoreError> {
    let epoch: i64 = sqlx::query("SELECT epoch FROM grant_epoch")
        .fetch_one(&inner.pool)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(StoreError::pg("reading where the grants stand"))?;
    Ok(epoch as u64)
}

fn grants_of(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<CapabilityGrant>, StoreError> {
    rows.iter()
        .map(|r| {
            let json: String = r.try_get(0).map_err(StoreError::pg("reading grants"))?;
            serde_json::from_str(&json).map_err(StoreError::data("reading grants"))
        })
        .collect()
}

pub(crate) async fn live_grants(
    inner: Arc<Inner>,
    now_ms: u64,
) -> Result<Vec<CapabilityGrant>, StoreError> {
    let rows = sqlx::query(
        "SELECT grant_json FROM grants WHERE revoked_ms IS NULL AND valid_to_ms > $1 ORDER BY n",
    )
    .bind(ms(now_ms))
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg("reading grants"))?;
    grants_of(&rows)
}

pub(crate) async fn all_grants(
    inner: Arc<Inner>,
) -> Result<Vec<(CapabilityGrant, Option<u64>)>, StoreError> {
    let rows = sqlx::query("SELECT grant_json, revoked_ms FROM grants ORDER BY n")
        .fetch_all(&inner.pool)
        .await
        .map_err(StoreError::pg("reading grants"))?;
    let grants = grants_of(&rows)?;
    grants
        .into_iter()
        .zip(&rows)
        .map(|(grant, r)| {
            let revoked: Option<i64> = r.try_get(1).map_err(StoreError::pg("reading grants"))?;
            Ok((grant, revoked.map(|r| r as u64)))
        })
        .collect()
}

pub(crate) async fn trust(
    inner: Arc<Inner>,
    agent: String,
) -> Result<Option<StoredTrust>, StoreError> {
    let row = sqlx::query("SELECT state, updated_ms FROM trust WHERE agent = $1")
        .bind(&agent)
        .fetch_optional(&inner.pool)
        .await
        .map_err(StoreError::pg("reading trust"))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let state: String = row.try_get(0).map_err(StoreError::pg("reading trust"))?;
    let at: i64 = row.try_get(1).map_err(StoreError::pg("reading trust"))?;
    Ok(Some(StoredTrust {
        agent,
        state: serde_json::from_str(&state).map_err(StoreError::data("reading trust"))?,
        updated_ms: at as u64,
    }))
}

pub(crate) async fn put_trust(
    inner: Arc<Inner>,
    agent: String,
    prior: Option<serde_json::Value>,
    state: serde_json::Value,
    changes: Vec<AuditEvent>,
) -> Result<bool, StoreError> {
    let failed = StoreError::pg("writing trust");
    let now = now_ms();
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    // The row (or, for an agent with none, its insertion) is what
    // concurrent writers of one agent's trust wait on.
    let written = match &prior {
        None => {
            sqlx::query(
                "INSERT INTO trust (agent, state, updated_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (agent) DO NOTHING",
            )
            .bind(&agent)
            .bind(state.to_string())
            .bind(ms(now))
            .execute(&mut *tx)
            .await
            .map_err(StoreError::pg("writing trust"))?
            .rows_affected()
                == 1
        }
        Some(_) => {
            let stored: Option<String> =
                sqlx::query("SELECT state FROM trust WHERE agent = $1 FOR UPDATE")
                    .bind(&agent)
                    .fetch_optional(&mut *tx)
                    .await
                    .and_then(|r| r.map(|r| r.try_get(0)).transpose())
                    .map_err(StoreError::pg("writing trust"))?;
            if !crate::trust::still(stored.as_deref(), prior.as_ref())? {
                return Ok(false);
            }
            sqlx::query("UPDATE trust SET state = $2, updated_ms = $3 WHERE agent = $1")
                .bind(&agent)
                .bind(state.to_string())
                .bind(ms(now))
                .execute(&mut *tx)
                .await
                .map_err(StoreError::pg("writing trust"))?;
            true
        }
    };
    if !written {
        return Ok(false);
    }
    audit::append_in(&mut tx, &inner, &entries(&changes, now)?).await?;
    for (agent, event) in crate::trust::history_rows(&changes)? {
        sqlx::query("INSERT INTO trust_changes (agent, at_ms, event) VALUES ($1, $2, $3)")
            .bind(agent)
            .bind(ms(now))
            .bind(event)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::pg("writing trust"))?;
    }
    tx.commit().await.map_err(StoreError::pg("writing trust"))?;
    Ok(true)
}

/// The newest `limit` trust changes of all agents (every host's), newest
/// first.
pub(crate) async fn trust_changes(
    inner: Arc<Inner>,
    limit: u64,
) -> Result<Vec<crate::StoredTrustChange>, StoreError> {
    let read = StoreError::pg("reading trust changes");
    let rows =
        sqlx::query("SELECT agent, at_ms, event FROM trust_changes ORDER BY id DESC LIMIT $1")
            .bind(limit.min(i64::MAX as u64) as i64)
            .fetch_all(&inner.pool)
            .await
            .map_err(read)?;
    rows.iter()
        .map(|r| {
            let event: String = r.try_get(2)?;
            Ok(crate::StoredTrustChange {
                agent: r.try_get(0)?,
                at_ms: r.try_get::<i64, _>(1)? as u64,
                event: serde_json::from_str(&event).unwrap_or(serde_json::Value::String(event)),
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(StoreError::pg("reading trust changes"))
}
