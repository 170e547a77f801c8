//! The [`Store`](crate::Store) interface on a PostgreSQL server
//! ([`PgStore`]), for replicas that share their state: `[state] url =
//! "postgres://..."`.
//!
//! The driver (sqlx) is async; the store runs it on a small runtime of its
//! own, so it answers callers on any thread, inside or outside another
//! runtime, and its connections never depend on the caller's runtime
//! staying alive. Each host key has its own audit chain (`audit.rs`);
//! every process that writes with that key appends to it in turn, under a
//! row lock. Every grant change moves one epoch row in its transaction,
//! which [`Store::grants_version`] reads, so a grant revoked on any
//! replica stops applying at every replica's next call.

mod anchor;
mod audit;
mod blueprints;
mod data;
mod gaps;
mod pins;
mod plugins;
mod schema;
mod sessions;
mod store;

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, Row};
use warden_signing::SecretKey;

pub use schema::PG_SCHEMA_VERSION;

use crate::StoreError;
use crate::checkpoint::Cover;

/// The state in a PostgreSQL database. Cheap to share behind an `Arc`.
pub struct PgStore {
    /// Runs every query; shut down (without waiting) when the store goes.
    runtime: Option<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
}

/// What the store's tasks share.
pub(crate) struct Inner {
    pub(crate) pool: PgPool,
    /// The URL without its password, for messages.
    pub(crate) location: String,
    /// This host's audit chain: its key's id.
    pub(crate) chain: String,
    pub(crate) cover: Cover,
    pub(crate) audit_args: std::sync::atomic::AtomicBool,
    /// The group-commit writer's queue (`audit.rs`).
    pub(crate) appends: tokio::sync::mpsc::UnboundedSender<audit::Append>,
    /// The other chains' heads this host last anchored (`anchor.rs`).
    pub(crate) anchored: std::sync::Mutex<Vec<warden_api::ChainHead>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

/// `url` without its password: `postgres://user@host:port/database`.
fn location(url: &str, options: &PgConnectOptions) -> String {
    if url.contains('@') || url.contains("password") {
        format!(
            "postgres://{}@{}:{}/{}",
            options.get_username(),
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("")
        )
    } else {
        url.to_owned()
    }
}

/// How many connections one process keeps at most.
const MAX_CONNECTIONS: u32 = 16;
/// How long a query waits for a free connection, or a first connection
/// for its server, before it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`,
    /// with the driver's options such as `sslmode`), checks that it is
    /// empty or Warden's and migrates it, and registers this host's audit
    /// chain, whose records `key` signs. A database that is not Warden's,
    /// or is newer than this build, is an error: the host never silently
    /// starts empty.
    pub fn open(url: &str, key: SecretKey) -> Result<PgStore, StoreError> {
        let not_postgres = |detail: String| StoreError::Database {
            location: "[state] url".into(),
            detail: format!("not a PostgreSQL URL: {detail}"),
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(not_postgres(
                "it must start with `postgres://` or `postgresql://`".into(),
            ));
        }
        let options = PgConnectOptions::from_str(url).map_err(|e| not_postgres(e.to_string()))?;
        let location = location(url, &options);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("warden-store-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database {
                location: location.clone(),
                detail: format!("starting the store's runtime: {e}"),
            })?;
        let (appends, queue) = tokio::sync::mpsc::unbounded_channel();
        let connect = {
            let location = location.clone();
            async move {
                let failed = |source| StoreError::Connect {
                    location: location.clone(),
                    source,
                };
                let mut conn = sqlx::PgConnection::connect_with(&options)
                    .await
                    .map_err(failed)?;
                schema::migrate(&mut conn, &location).await?;
                conn.close().await.map_err(failed)?;
                let pool = PgPoolOptions::new()
                    .max_connections(MAX_CONNECTIONS)
                    .acquire_timeout(CONNECT_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(failed)?;
                Ok::<_, StoreError>(pool)
            }
        };
        let pool = crate::writer::block_on(runtime.spawn(connect)).map_err(|e| {
            StoreError::Database {
                location: location.clone(),
                detail: format!("connecting: {e}"),
            }
        })??;
        let chain = key.public().key_id().as_str().to_owned();
        let public = key.public().to_text();
        let inner = Arc::new(Inner {
            pool,
            location,
            chain,
            cover: Cover::new(key, true),
            audit_args: std::sync::atomic::AtomicBool::new(false),
            appends,
            anchored: std::sync::Mutex::new(Vec::new()),
        });
        let store = PgStore {
            runtime: Some(runtime),
            inner,
        };
        store.run(|inner| async move {
            sqlx::query(
                "INSERT INTO audit_chains (chain, public_key, started_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (chain) DO NOTHING",
            )
            .bind(&inner.chain)
            .bind(&public)
            .bind(crate::now_ms() as i64)
            .execute(&inner.pool)
            .await
            .map_err(StoreError::pg("registering this host's audit chain"))?;
            Ok(())
        })?;
        if let Some(runtime) = &store.runtime {
            runtime.spawn(audit::writer(Arc::downgrade(&store.inner), queue));
        }
        Ok(store)
    }

    /// Decisions carry the call's arguments, not just their digest.
    pub fn with_audit_args(self, on: bool) -> PgStore {
        self.inner
            .audit_args
            .store(on, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// Runs `body` on the store's runtime and waits for it on this thread.
    pub(crate) fn run<T, F>(&self, body: impl FnOnce(Arc<Inner>) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return Err(self.stopped());
        };
        crate::writer::block_on(runtime.spawn(body(self.inner.clone()))).map_err(|e| {
            StoreError::Database {
                location: self.inner.location.clone(),
                detail: format!("a store task failed: {e}"),
            }
        })?
    }

    fn stopped(&self) -> StoreError {
        StoreError::Database {
            location: self.inner.location.clone(),
            detail: "the store was shut down".into(),
        }
    }

    pub(crate) fn schema_version(&self) -> Result<u32, StoreError> {
        self.run(|inner| async move {
            let v: i32 = sqlx::query("SELECT version FROM warden_schema")
                .fetch_one(&inner.pool)
                .await
                .and_then(|r| r.try_get(0))
                .map_err(StoreError::pg("reading the schema version"))?;
            Ok(u32::try_from(v).unwrap_or(0))
        })
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which an async caller
        // may not do; the pool closes its connections as they go.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
