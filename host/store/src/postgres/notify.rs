//! Changes announced between replicas: a commit that changes grants runs
//! `NOTIFY warden_grants` in its transaction, and every store listens, so
//! a grant issued or revoked on one replica moves the grants version of
//! all (their gates rebuild the grants in force before the next
//! decision). A lost connection may have lost notifications: the version
//! moves then too.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sqlx::postgres::PgListener;

use super::Inner;
use crate::StoreError;

/// The channel grant changes are announced on.
pub(crate) const GRANTS: &str = "warden_grants";

/// What runs the listener once it listens.
type Listening = Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Starts listening (so no change committed after this returns is
/// missed) and returns the loop that follows the announcements.
pub(crate) async fn listen(inner: Arc<Inner>) -> Result<Listening, StoreError> {
    let mut listener = PgListener::connect_with(&inner.pool)
        .await
        .map_err(StoreError::pg("listening for changes"))?;
    listener
        .listen(GRANTS)
        .await
        .map_err(StoreError::pg("listening for changes"))?;
    Ok(Box::pin(async move {
        loop {
            match listener.try_recv().await {
                Ok(Some(_)) => {}
                // The connection dropped: announcements may be lost, and
                // the next call reconnects.
                Ok(None) => tracing::warn!("the PostgreSQL listener reconnects"),
                Err(e) => {
                    tracing::warn!(error = %e, "listening for changes failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            inner.grant_changes.fetch_add(1, Ordering::SeqCst);
        }
    }))
}
