//! Rules people added by answering "always allow": reloaded at start.

use rusqlite::params;
use serde::Serialize;
use warden_api::Attribution;

use crate::{SqliteStore, StoreError, now_ms};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredRule {
    pub agent: String,
    pub rule: String,
    pub approval: Option<String>,
    pub added_ms: u64,
}

impl SqliteStore {
    /// Adds an allow rule (once; adding it again changes nothing) and
    /// audits it with who added it, in one transaction.
    pub fn add_rule(
        &self,
        agent: &str,
        rule: &str,
        approval: Option<&str>,
        by: Option<&Attribution>,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sql("adding a rule"))?;
        let now = now_ms();
        let added = tx
            .execute(
                "INSERT OR IGNORE INTO rules (agent, rule, approval, added_ms) VALUES (?1, ?2, ?3, ?4)",
                params![agent, rule, approval, now as i64],
            )
            .map_err(StoreError::sql("adding a rule"))?;
        if added > 0 {
            let event = crate::events::rule_added(agent, rule, approval, by);
            self.audit_in(&tx, [&event], now)?;
        }
        tx.commit().map_err(StoreError::sql("adding a rule"))
    }

    /// Every added rule, in the order added.
    pub fn rules(&self) -> Result<Vec<StoredRule>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT agent, rule, approval, added_ms FROM rules ORDER BY id")
            .map_err(StoreError::sql("reading rules"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StoredRule {
                    agent: r.get(0)?,
                    rule: r.get(1)?,
                    approval: r.get(2)?,
                    added_ms: r.get::<_, i64>(3)? as u64,
                })
            })
            .map_err(StoreError::sql("reading rules"))?;
        rows.collect::<Result<_, _>>()
            .map_err(StoreError::sql("reading rules"))
    }
}
