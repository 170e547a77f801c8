//! MCP sessions in PostgreSQL (the meaning: `sessions.rs`).

use std::sync::Arc;

use sqlx::Row;

use super::Inner;
use crate::db::ms;
use crate::{StoreError, now_ms};

pub(crate) async fn put(
    inner: Arc<Inner>,
    id: String,
    state: serde_json::Value,
    expires_ms: u64,
) -> Result<(), StoreError> {
    let mut tx = inner
        .pool
        .begin()
        .await
        .map_err(StoreError::pg("storing a session"))?;
    sqlx::query("DELETE FROM sessions WHERE expires_ms <= $1")
        .bind(ms(now_ms()))
        .execute(&mut *tx)
        .await
        .map_err(StoreError::pg("clearing expired sessions"))?;
    sqlx::query(
        "INSERT INTO sessions (id, state, expires_ms) VALUES ($1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, expires_ms = excluded.expires_ms",
    )
    .bind(id.as_bytes())
    .bind(state.to_string())
    .bind(ms(expires_ms))
    .execute(&mut *tx)
    .await
    .map_err(StoreError::pg("storing a session"))?;
    tx.commit()
        .await
        .map_err(StoreError::pg("storing a session"))
}

pub(crate) async fn get(
    inner: Arc<Inner>,
    id: String,
) -> Result<Option<serde_json::Value>, StoreError> {
    let row = sqlx::query("SELECT state FROM sessions WHERE id = $1 AND expires_ms > $2")
        .bind(id.as_bytes())
        .bind(ms(now_ms()))
        .fetch_optional(&inner.pool)
        .await
        .map_err(StoreError::pg("reading a session"))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let state: String = row
        .try_get(0)
        .map_err(StoreError::pg("reading a session"))?;
    serde_json::from_str(&state)
        .map(Some)
        .map_err(StoreError::data("reading a session"))
}

pub(crate) async fn drop(inner: Arc<Inner>, id: String) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM sessions WHERE id = $1")
        .bind(id.as_bytes())
        .execute(&inner.pool)
        .await
        .map(|_| ())
        .map_err(StoreError::pg("ending a session"))
}
