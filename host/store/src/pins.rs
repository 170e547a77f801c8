//! Definition pins: an operator's approval of the tool definitions a
//! server offers (a bridged MCP server, or a plugin), kept as the sha256
//! of each definition's canonical JSON with the definition itself (so a
//! changed one can be shown beside what was approved). A tool whose
//! current definition has no pin of the same digest is not offered.
//! This file holds the SQLite side; `postgres/pins.rs` the PostgreSQL one.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension as _, params};
use serde::{Deserialize, Serialize};
use warden_api::{Attribution, AuditEvent, PinnedTool};

use crate::{SqliteStore, StoreError, now_ms};

/// One approved tool definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefinitionPin {
    /// The server (a bridge's namespace, or a plugin's name).
    pub server: String,
    /// The tool's name as the server gives it.
    pub tool: String,
    /// `sha256:<hex>` of the definition's canonical JSON.
    pub digest: String,
    /// The definition approved.
    pub definition: serde_json::Value,
    /// When it was approved (set by the store).
    pub approved_ms: u64,
    /// Who approved it (set by the store).
    pub by: Option<Attribution>,
}

/// The audit events of pinning `pins`: one per server, in server order.
pub(crate) fn pinned_events(pins: &[DefinitionPin], by: &Attribution) -> Vec<AuditEvent> {
    let mut servers: BTreeMap<&str, Vec<PinnedTool>> = BTreeMap::new();
    for pin in pins {
        servers.entry(&pin.server).or_default().push(PinnedTool {
            tool: pin.tool.clone(),
            digest: pin.digest.clone(),
        });
    }
    servers
        .into_iter()
        .map(|(server, tools)| AuditEvent::DefinitionsPinned {
            server: server.to_owned(),
            tools,
            by: by.clone(),
        })
        .collect()
}

pub(crate) fn unpinned_event(server: &str, tools: &[String], by: &Attribution) -> AuditEvent {
    AuditEvent::DefinitionsUnpinned {
        server: server.to_owned(),
        tools: tools.to_vec(),
        by: by.clone(),
    }
}

impl SqliteStore {
    pub(crate) fn pin_definitions(
        &self,
        pins: &[DefinitionPin],
        by: &Attribution,
    ) -> Result<(), StoreError> {
        let by_text = serde_json::to_string(by).map_err(StoreError::data("pinning definitions"))?;
        let now = now_ms();
        let conn = self.conn();
        crate::tx::write(&conn, "pinning definitions", |conn| {
            let mut upsert = conn
                .prepare_cached(
                    "INSERT INTO definition_pins (server, tool, digest, definition, approved_ms, approved_by) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (server, tool) DO UPDATE SET \
                     digest = excluded.digest, definition = excluded.definition, \
                     approved_ms = excluded.approved_ms, approved_by = excluded.approved_by",
                )
                .map_err(StoreError::sql("pinning definitions"))?;
            for pin in pins {
                upsert
                    .execute(params![
                        pin.server,
                        pin.tool,
                        pin.digest,
                        pin.definition.to_string(),
                        now as i64,
                        by_text
                    ])
                    .map_err(StoreError::sql("pinning definitions"))?;
            }
            self.audit_in(conn, &pinned_events(pins, by), now)
        })
    }

    pub(crate) fn unpin_definitions(
        &self,
        server: &str,
        tools: &[String],
        by: &Attribution,
    ) -> Result<u64, StoreError> {
        let now = now_ms();
        let conn = self.conn();
        crate::tx::write(&conn, "unpinning definitions", |conn| {
            let removed = if tools.is_empty() {
                conn.execute(
                    "DELETE FROM definition_pins WHERE server = ?1",
                    params![server],
                )
                .map_err(StoreError::sql("unpinning definitions"))?
            } else {
                let mut delete = conn
                    .prepare_cached("DELETE FROM definition_pins WHERE server = ?1 AND tool = ?2")
                    .map_err(StoreError::sql("unpinning definitions"))?;
                let mut removed = 0;
                for tool in tools {
                    removed += delete
                        .execute(params![server, tool])
                        .map_err(StoreError::sql("unpinning definitions"))?;
                }
                removed
            };
            if removed > 0 {
                self.audit_in(conn, [&unpinned_event(server, tools, by)], now)?;
            }
            Ok(removed as u64)
        })
    }

    pub(crate) fn pinned_digest(
        &self,
        server: &str,
        tool: &str,
    ) -> Result<Option<String>, StoreError> {
        let conn = self.conn();
        conn.prepare_cached("SELECT digest FROM definition_pins WHERE server = ?1 AND tool = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(params![server, tool], |r| r.get(0))
                    .optional()
            })
            .map_err(StoreError::sql("reading a definition pin"))
    }

    pub(crate) fn definition_pins(
        &self,
        server: Option<&str>,
    ) -> Result<Vec<DefinitionPin>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT server, tool, digest, definition, approved_ms, approved_by FROM definition_pins \
                 WHERE ?1 IS NULL OR server = ?1 ORDER BY server, tool",
            )
            .map_err(StoreError::sql("reading definition pins"))?;
        let rows = stmt
            .query_map(params![server], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(StoreError::sql("reading definition pins"))?;
        let mut out = Vec::new();
        for row in rows {
            let (server, tool, digest, definition, at, by) =
                row.map_err(StoreError::sql("reading definition pins"))?;
            out.push(read_pin(server, tool, digest, &definition, at, &by)?);
        }
        Ok(out)
    }
}

/// A pin from its stored columns.
pub(crate) fn read_pin(
    server: String,
    tool: String,
    digest: String,
    definition: &str,
    approved_ms: i64,
    by: &str,
) -> Result<DefinitionPin, StoreError> {
    let parse = StoreError::data("reading definition pins");
    Ok(DefinitionPin {
        server,
        tool,
        digest,
        definition: serde_json::from_str(definition).map_err(parse)?,
        approved_ms: approved_ms.max(0) as u64,
        by: Some(serde_json::from_str(by).map_err(StoreError::data("reading definition pins"))?),
    })
}
