//! Definition pins in PostgreSQL (the meaning: `pins.rs`).

use std::sync::Arc;

use sqlx::Row;
use warden_api::Attribution;

use super::{Inner, audit};
use crate::chain::Entry;
use crate::pins::{DefinitionPin, pinned_events, read_pin, unpinned_event};
use crate::{StoreError, now_ms};

pub(crate) async fn pin(
    inner: Arc<Inner>,
    pins: Vec<DefinitionPin>,
    by: Attribution,
) -> Result<(), StoreError> {
    let by_text = serde_json::to_string(&by).map_err(StoreError::data("pinning definitions"))?;
    let now = now_ms();
    let failed = StoreError::pg("pinning definitions");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    for pin in &pins {
        sqlx::query(
            "INSERT INTO definition_pins (server, tool, digest, definition, approved_ms, approved_by) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (server, tool) DO UPDATE SET \
             digest = excluded.digest, definition = excluded.definition, \
             approved_ms = excluded.approved_ms, approved_by = excluded.approved_by",
        )
        .bind(&pin.server)
        .bind(pin.tool.as_bytes())
        .bind(&pin.digest)
        .bind(pin.definition.to_string())
        .bind(now.min(i64::MAX as u64) as i64)
        .bind(&by_text)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg("pinning definitions"))?;
    }
    let entries = pinned_events(&pins, &by)
        .iter()
        .map(|e| Entry::new(e, now))
        .collect::<Result<Vec<_>, _>>()?;
    audit::append_in(&mut tx, &inner, &entries).await?;
    tx.commit()
        .await
        .map_err(StoreError::pg("pinning definitions"))
}

pub(crate) async fn unpin(
    inner: Arc<Inner>,
    server: String,
    tools: Vec<String>,
    by: Attribution,
) -> Result<u64, StoreError> {
    let now = now_ms();
    let failed = StoreError::pg("unpinning definitions");
    let mut tx = inner.pool.begin().await.map_err(failed)?;
    let removed = if tools.is_empty() {
        sqlx::query("DELETE FROM definition_pins WHERE server = $1")
            .bind(&server)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::pg("unpinning definitions"))?
            .rows_affected()
    } else {
        let names: Vec<Vec<u8>> = tools.iter().map(|t| t.as_bytes().to_vec()).collect();
        sqlx::query("DELETE FROM definition_pins WHERE server = $1 AND tool = ANY($2)")
            .bind(&server)
            .bind(names)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::pg("unpinning definitions"))?
            .rows_affected()
    };
    if removed > 0 {
        let entry = Entry::new(&unpinned_event(&server, &tools, &by), now)?;
        audit::append_in(&mut tx, &inner, &[entry]).await?;
    }
    tx.commit()
        .await
        .map_err(StoreError::pg("unpinning definitions"))?;
    Ok(removed)
}

pub(crate) async fn pinned_digest(
    inner: Arc<Inner>,
    server: String,
    tool: String,
) -> Result<Option<String>, StoreError> {
    sqlx::query_scalar("SELECT digest FROM definition_pins WHERE server = $1 AND tool = $2")
        .bind(server)
        .bind(tool.into_bytes())
        .fetch_optional(&inner.pool)
        .await
        .map_err(StoreError::pg("reading a definition pin"))
}

pub(crate) async fn pins(
    inner: Arc<Inner>,
    server: Option<String>,
) -> Result<Vec<DefinitionPin>, StoreError> {
    let rows = sqlx::query(
        "SELECT server, tool, digest, definition, approved_ms, approved_by FROM definition_pins \
         WHERE $1::text IS NULL OR server = $1 ORDER BY server, tool",
    )
    .bind(server)
    .fetch_all(&inner.pool)
    .await
    .map_err(StoreError::pg("reading definition pins"))?;
    rows.iter()
        .map(|r| {
            let read = StoreError::pg("reading definition pins");
            let columns = (|| {
                Ok::<_, sqlx::Error>((
                    r.try_get::<String, _>(0)?,
                    r.try_get::<Vec<u8>, _>(1)?,
                    r.try_get::<String, _>(2)?,
                    r.try_get::<String, _>(3)?,
                    r.try_get::<i64, _>(4)?,
                    r.try_get::<String, _>(5)?,
                ))
            })();
            let (server, tool, digest, definition, at, by) = columns.map_err(read)?;
            let tool = String::from_utf8(tool).map_err(|e| StoreError::Data {
                operation: "reading definition pins",
                detail: e.to_string(),
            })?;
            read_pin(server, tool, digest, &definition, at, &by)
        })
        .collect()
}
