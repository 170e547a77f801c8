//! A bridged server's tools on a replica of a shared store: each call
//! checks, in the store, that an operator's pin still approves the very
//! definition it would run under.
//!
//! Attack: a definition an operator revoked through another replica
//! still served here until this replica next judges its listing (every
//! [`super::live::PINS_EVERY`]). The check reads the tool's pin (one
//! row) before the call reaches the upstream server: a revoked or changed
//! pin refuses it (`not_approved`), and a pin that cannot be read refuses
//! it too.

use std::sync::Arc;

use serde_json::Value;
use warden_api::{
    Backend, BackendCall, BoxFuture, CallLimits, Envelope, ErrorType, Grants, HostCode, Isolation,
    ToolSpec, VcsFacts,
};
use warden_mcp::bridge::Catalog;
use warden_store::Store;

/// The backend of a bridge, behind the pin check.
pub(crate) struct Pinned {
    pub inner: Arc<dyn Backend>,
    pub store: Arc<dyn Store>,
    pub bridge: String,
    /// The catalog `inner` serves (the listing as judged when published).
    pub catalog: Arc<Catalog>,
}

impl Pinned {
    /// Why a call of `name` may not run now, if it may not.
    fn refusal(&self, name: &str) -> Option<Envelope> {
        // A name the catalog does not publish is the inner backend's to
        // refuse, with its reason.
        let listed = self.catalog.get(name)?;
        match self.store.pinned_digest(&self.bridge, &listed.upstream) {
            Ok(Some(pinned)) if pinned == listed.digest => None,
            Ok(_) => Some(Envelope::host(
                ErrorType::PermissionDenied,
                HostCode::NotApproved,
                format!(
                    "`{name}` ({}'s `{}`) is not approved: an operator revoked its definition \
                     (or approved another one); an operator approves it with \
                     `warden bridge approve {} {}`",
                    self.bridge, listed.upstream, self.bridge, listed.upstream
                ),
            )),
            Err(e) => Some(Envelope::host(
                ErrorType::HostError,
                HostCode::NotApproved,
                format!(
                    "the approvals of `{name}` could not be read ({e}); nothing ran, try again"
                ),
            )),
        }
    }
}

impl Backend for Pinned {
    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools()
    }

    fn isolation(&self) -> Isolation {
        self.inner.isolation()
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        match self.refusal(call.tool.name.as_str()) {
            Some(refused) => Box::pin(std::future::ready(refused)),
            None => self.inner.invoke(call),
        }
    }

    fn resource<'a>(
        &'a self,
        tool: &'a str,
        id: &'a str,
        limits: CallLimits,
    ) -> BoxFuture<'a, Envelope> {
        self.inner.resource(tool, id, limits)
    }

    fn withheld(&self, name: &str) -> Option<Envelope> {
        self.inner.withheld(name)
    }

    fn vcs_operation(&self, tool: &str, args: &Value, grants: &Grants) -> Option<VcsFacts> {
        self.inner.vcs_operation(tool, args, grants)
    }

    fn end_task<'a>(&'a self, task: &'a str) -> BoxFuture<'a, ()> {
        self.inner.end_task(task)
    }
}
