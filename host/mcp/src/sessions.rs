//! rmcp's session store over the host's durable [`SessionStates`]: a
//! request naming a session this process does not hold (it was made on
//! another replica, or before a restart) restores it from what its
//! client's `initialize` said, instead of failing with "session not
//! found". Only clients on revisions before 2026-07-28 have sessions.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use warden_api::SessionStates;

/// The adapter rmcp's HTTP service holds.
#[derive(Debug)]
pub(crate) struct Kept(pub(crate) Arc<dyn SessionStates>);

#[async_trait::async_trait]
impl SessionStore for Kept {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(state) = self.0.load(session_id)? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_value(state)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(self.0.store(session_id, &serde_json::to_value(state)?)?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.0.remove(session_id)?)
    }
}
