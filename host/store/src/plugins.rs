//! The deployment's installed plugins, for replicas that share a store:
//! each plugin's component and detached signature as the operator
//! installed them on some replica, or a tombstone when it was removed.
//! Every replica keeps its own `STATE/plugins` equal to this set
//! (`warden-server`'s plugin sync), admitting each component by its
//! signature under its own policy before it loads: a row anyone wrote to
//! the database runs nowhere unless a trusted publisher signed it.
//!
//! The newest change of a name wins (`at_ms`): a write older than the one
//! stored changes nothing, so replicas publishing what they hold never
//! undo a later install or removal. This file holds the SQLite side and
//! the types; `postgres/plugins.rs` the PostgreSQL one.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::db::ms;
use crate::{SqliteStore, StoreError};

/// Where one plugin name stands in the deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedPlugin {
    pub name: String,
    /// `sha256:<hex>` of the installed component and manifest; `None`:
    /// removed.
    pub digest: Option<String>,
    /// The registry's record of the install (version, signer, tools);
    /// `null` when removed.
    pub record: serde_json::Value,
    /// When it was installed or removed.
    pub at_ms: u64,
}

/// A plugin's files, as installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFiles {
    pub component: Vec<u8>,
    /// The detached signature's text; `None`: admitted unsigned.
    pub signature: Option<String>,
}

impl SqliteStore {
    pub fn shared_plugins(&self) -> Result<Vec<SharedPlugin>, StoreError> {
        let read = || StoreError::sql("reading the deployment's plugins");
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT name, digest, record, at_ms FROM plugins ORDER BY name")
            .map_err(read())?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .map_err(read())?;
        rows.map(|row| {
            let (name, digest, record, at) = row.map_err(read())?;
            Ok(SharedPlugin {
                name,
                digest,
                record: serde_json::from_str(&record)
                    .map_err(StoreError::data("reading the deployment's plugins"))?,
                at_ms: at as u64,
            })
        })
        .collect()
    }

    pub fn plugin_files(
        &self,
        name: &str,
        digest: &str,
    ) -> Result<Option<PluginFiles>, StoreError> {
        self.conn()
            .query_row(
                "SELECT component, signature FROM plugins WHERE name = ?1 AND digest = ?2",
                params![name, digest],
                |r| {
                    Ok(PluginFiles {
                        component: r.get(0)?,
                        signature: r.get(1)?,
                    })
                },
            )
            .optional()
            .map_err(StoreError::sql("reading a plugin's files"))
    }

    /// Records `plugin` with its files (`None` with a `None` digest: a
    /// removal), unless a newer change of its name is stored. Returns
    /// whether it was written.
    pub fn put_shared_plugin(
        &self,
        plugin: &SharedPlugin,
        files: Option<&PluginFiles>,
    ) -> Result<bool, StoreError> {
        let record = plugin.record.to_string();
        let changed = self
            .conn()
            .execute(
                "INSERT INTO plugins (name, digest, record, component, signature, at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (name) DO UPDATE SET digest = excluded.digest, \
                 record = excluded.record, component = excluded.component, \
                 signature = excluded.signature, at_ms = excluded.at_ms \
                 WHERE plugins.at_ms <= excluded.at_ms",
                params![
                    plugin.name,
                    plugin.digest,
                    record,
                    files.map(|f| f.component.as_slice()),
                    files.and_then(|f| f.signature.as_deref()),
                    ms(plugin.at_ms),
                ],
            )
            .map_err(StoreError::sql("recording a plugin of the deployment"))?;
        Ok(changed == 1)
    }
}
