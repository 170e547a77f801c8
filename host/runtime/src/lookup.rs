//! `wasi:sockets/ip-name-lookup`, filtered by the call's grants.
//!
//! Attack: a guest granted one name for its sockets (`example.com:80`)
//! using the host's resolver as a channel of its own — a lookup of
//! `secret-4242.attacker.example` carries data out through DNS whatever
//! the connection rules say — or to map internal names. WASI's switch is
//! all or nothing, so this shadows the standard implementation: a name a
//! raw-socket grant does not cover is refused with `access-denied` before
//! any query is made, and the reason goes to the call's denial log; a
//! covered name is looked up as before (and its addresses still face the
//! connection check).

use std::sync::Arc;

use warden_api::net::EffectiveNet;
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{
    self, Host, HostResolveAddressStream, ResolveAddressStream,
};
use wasmtime_wasi::p2::bindings::sockets::network::Error as NetworkError;
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

use crate::denials::Denials;
use crate::state::HostState;

/// The lookup view of a call's store: WASI's sockets view plus the grant
/// and the denial log.
pub(crate) struct FilteredLookup<'a> {
    inner: WasiSocketsCtxView<'a>,
    net: &'a Arc<EffectiveNet>,
    denials: &'a Denials,
}

struct Filtered;

impl HasData for Filtered {
    type Data<'a> = FilteredLookup<'a>;
}

fn view(state: &mut HostState) -> FilteredLookup<'_> {
    FilteredLookup {
        inner: WasiSocketsCtxView {
            ctx: state.wasi.sockets(),
            table: &mut state.table,
        },
        net: &state.net,
        denials: &state.denials,
    }
}

/// Replaces the standard `ip-name-lookup` in `linker` (added before).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = ip_name_lookup::add_to_linker::<HostState, Filtered>(linker, view);
    linker.allow_shadowing(false);
    added
}

impl Host for FilteredLookup<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        if let Err(refusal) = self.net.check_name_lookup(&name) {
            self.denials.record(refusal.reason);
            return Err(ErrorCode::AccessDenied.into());
        }
        Host::resolve_addresses(&mut self.inner, network, name)
    }
}

/// The network interface's error helpers, as WASI has them (the lookup
/// interface's bindings ask for them).
impl network::Host for FilteredLookup<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.inner, error)
    }

    fn network_error_code(
        &mut self,
        err: Resource<NetworkError>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.inner, err)
    }
}

impl network::HostNetwork for FilteredLookup<'_> {
    fn drop(&mut self, this: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.inner, this)
    }
}

impl HostResolveAddressStream for FilteredLookup<'_> {
    fn resolve_next_address(
        &mut self,
        resource: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        HostResolveAddressStream::resolve_next_address(&mut self.inner, resource)
    }

    fn subscribe(
        &mut self,
        resource: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        HostResolveAddressStream::subscribe(&mut self.inner, resource)
    }

    fn drop(&mut self, resource: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        HostResolveAddressStream::drop(&mut self.inner, resource)
    }
}
