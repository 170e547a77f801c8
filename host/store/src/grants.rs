//! Capability grants: issued (with an id the store assigns), listed,
//! revoked; each change audited in the same transaction.

use rusqlite::params;
use warden_api::Attribution;
use warden_policy::CapabilityGrant;

use crate::{SqliteStore, StoreError, now_ms};

impl SqliteStore {
    /// Stores `grant` under a new id (`g-N`, its `id` is ignored) and
    /// returns it as stored; `by` is the operator who issued it, when one
    /// did (audited with the grant).
    pub fn issue_grant(
        &self,
        mut grant: CapabilityGrant,
        by: Option<&Attribution>,
    ) -> Result<CapabilityGrant, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("issuing a grant"))?;
        let next: i64 = tx
            .query_row("SELECT coalesce(max(rowid), 0) + 1 FROM grants", [], |r| {
                r.get(0)
            })
            .map_err(StoreError::sql("issuing a grant"))?;
        grant.id = format!("g-{next}");
        let json = serde_json::to_string(&grant).map_err(StoreError::data("issuing a grant"))?;
        tx.execute(
            "INSERT INTO grants (rowid, id, agent, grant_json, valid_to_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![next, grant.id, grant.agent, json, grant.valid_to_ms as i64],
        )
        .map_err(StoreError::sql("issuing a grant"))?;
        self.audit_in(&tx, [&crate::events::grant_issued(&grant, by)], now_ms())?;
        tx.commit().map_err(StoreError::sql("issuing a grant"))?;
        self.grant_changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(grant)
    }

    /// Revokes a grant that is not already revoked, on `by`'s word.
    pub fn revoke_grant(&self, id: &str, by: &Attribution) -> Result<CapabilityGrant, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("revoking a grant"))?;
        let now = now_ms();
        let json: String = tx
            .query_row(
                "SELECT grant_json FROM grants WHERE id = ?1 AND revoked_ms IS NULL",
                params![id],
                |r| r.get(0),
            )
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => StoreError::NoSuchGrant(id.to_owned()),
                e => StoreError::Sql {
                    operation: "revoking a grant",
                    source: e,
                },
            })?;
        let grant: CapabilityGrant =
            serde_json::from_str(&json).map_err(StoreError::data("revoking a grant"))?;
        tx.execute(
            "UPDATE grants SET revoked_ms = ?2, revoked_by = ?3 WHERE id = ?1",
            params![id, now as i64, by.actor],
        )
        .map_err(StoreError::sql("revoking a grant"))?;
        self.audit_in(&tx, [&crate::events::grant_revoked(&grant, by)], now)?;
        tx.commit().map_err(StoreError::sql("revoking a grant"))?;
        self.grant_changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(grant)
    }

    /// Grants not revoked and not expired at `now_ms` (including ones
    /// that start later), oldest first.
    pub fn live_grants(&self, now_ms: u64) -> Result<Vec<CapabilityGrant>, StoreError> {
        self.grants_where(
            "revoked_ms IS NULL AND valid_to_ms > ?1",
            now_ms.min(i64::MAX as u64) as i64,
        )
    }

    /// Every grant ever issued, oldest first, with whether it was revoked.
    pub fn all_grants(&self) -> Result<Vec<(CapabilityGrant, Option<u64>)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT grant_json, revoked_ms FROM grants ORDER BY rowid")
            .map_err(StoreError::sql("reading grants"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
            })
            .map_err(StoreError::sql("reading grants"))?;
        let mut out = Vec::new();
        for row in rows {
            let (json, revoked) = row.map_err(StoreError::sql("reading grants"))?;
            let grant = serde_json::from_str(&json).map_err(StoreError::data("reading grants"))?;
            out.push((grant, revoked.map(|r| r as u64)));
        }
        Ok(out)
    }

    fn grants_where(&self, filter: &str, arg: i64) -> Result<Vec<CapabilityGrant>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT grant_json FROM grants WHERE {filter} ORDER BY rowid"
            ))
            .map_err(StoreError::sql("reading grants"))?;
        let rows = stmt
            .query_map(params![arg], |r| r.get::<_, String>(0))
            .map_err(StoreError::sql("reading grants"))?;
        let mut out = Vec::new();
        for row in rows {
            let json = row.map_err(StoreError::sql("reading grants"))?;
            out.push(serde_json::from_str(&json).map_err(StoreError::data("reading grants"))?);
        }
        Ok(out)
    }
}
