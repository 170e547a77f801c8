//! Where an agent asks for a capability grant (the `request_capability`
//! tool). The MCP server exposes it; the host implements it over its
//! policy's bounds, the approvals book and the store.

use serde_json::Value;

use crate::{BoxFuture, CallContext, Envelope};

pub trait CapabilityDesk: Send + Sync {
    /// Handles one `request_capability(capability, justification, ttl,
    /// boundary)` call; the envelope is the tool's result: the grant, a
    /// pending approval to retry after, or a refusal.
    fn request<'a>(&'a self, context: &'a CallContext, args: &'a Value) -> BoxFuture<'a, Envelope>;
}
