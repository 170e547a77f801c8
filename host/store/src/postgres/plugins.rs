//! The deployment's installed plugins on PostgreSQL (see `plugins.rs` of
//! the crate for what they are and how changes of one name are ordered).

use std::sync::Arc;

use sqlx::Row;

use super::Inner;
use crate::db::ms;
use crate::{PluginFiles, SharedPlugin, StoreError};

pub(crate) async fn shared_plugins(inner: Arc<Inner>) -> Result<Vec<SharedPlugin>, StoreError> {
    let read = || StoreError::pg("reading the deployment's plugins");
    let rows = sqlx::query("SELECT name, digest, record, at_ms FROM plugins ORDER BY name")
        .fetch_all(&inner.pool)
        .await
        .map_err(read())?;
    rows.iter()
        .map(|r| {
            let record: String = r.try_get(2).map_err(read())?;
            Ok(SharedPlugin {
                name: r.try_get(0).map_err(read())?,
                digest: r.try_get(1).map_err(read())?,
                record: serde_json::from_str(&record)
                    .map_err(StoreError::data("reading the deployment's plugins"))?,
                at_ms: r.try_get::<i64, _>(3).map_err(read())? as u64,
            })
        })
        .collect()
}

pub(crate) async fn plugin_files(
    inner: Arc<Inner>,
    name: String,
    digest: String,
) -> Result<Option<PluginFiles>, StoreError> {
    let read = || StoreError::pg("reading a plugin's files");
    let row =
        sqlx::query("SELECT component, signature FROM plugins WHERE name = $1 AND digest = $2")
            .bind(name)
            .bind(digest)
            .fetch_optional(&inner.pool)
            .await
            .map_err(read())?;
    row.map(|r| {
        Ok(PluginFiles {
            component: r.try_get(0).map_err(read())?,
            signature: r.try_get(1).map_err(read())?,
        })
    })
    .transpose()
}

pub(crate) async fn put_shared_plugin(
    inner: Arc<Inner>,
    plugin: SharedPlugin,
    files: Option<PluginFiles>,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "INSERT INTO plugins (name, digest, record, component, signature, at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (name) DO UPDATE SET digest = excluded.digest, \
         record = excluded.record, component = excluded.component, \
         signature = excluded.signature, at_ms = excluded.at_ms \
         WHERE plugins.at_ms <= excluded.at_ms",
    )
    .bind(&plugin.name)
    .bind(&plugin.digest)
    .bind(plugin.record.to_string())
    .bind(files.as_ref().map(|f| f.component.as_slice()))
    .bind(files.as_ref().and_then(|f| f.signature.as_deref()))
    .bind(ms(plugin.at_ms))
    .execute(&inner.pool)
    .await
    .map_err(StoreError::pg("recording a plugin of the deployment"))?;
    Ok(done.rows_affected() == 1)
}
