//! The data of one call's `Store`: composed from one piece per capability.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::denials::Denials;
use crate::host_api::HostApi;
use crate::http::HttpCtx;
use crate::limits::CallLimiter;

pub(crate) struct HostState {
    pub wasi: WasiCtx,
    pub http: HttpCtx,
    pub table: ResourceTable,
    pub limiter: CallLimiter,
    pub host: HostApi,
    pub denials: Denials,
    /// The call's effective network grant (name lookups are checked here).
    pub net: std::sync::Arc<warden_api::net::EffectiveNet>,
    /// The call's denied paths, asked through `host.path-denied`.
    pub paths: Option<std::sync::Arc<dyn warden_api::PathGuard>>,
    /// The open-time checks of `paths` (`None`: the call has no guard,
    /// and opens are not checked).
    pub open_check: Option<crate::open_checks::OpenCheck>,
    /// Whether file operations run on the call's thread (else on tokio's
    /// blocking pool); the shadowed `open-at` follows it.
    pub fs_on_call_thread: bool,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
