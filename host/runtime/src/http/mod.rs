//! The `wasi:http` capability: the outgoing-request hook that puts every
//! request through [`Egress`], and the view the linker uses.

mod body;
mod egress;
mod tls;

use std::future::Future;

use http_body_util::BodyExt;
use wasmtime_wasi_http::{
    Error, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

pub use body::CappedBody;
pub use egress::{ConnectionTask, Egress, HttpLimits};

use crate::state::HostState;

/// The per-call `wasi:http` state.
pub(crate) struct HttpCtx {
    pub ctx: WasiHttpCtx,
    pub hooks: Hooks,
}

impl HttpCtx {
    pub fn new(egress: Egress) -> HttpCtx {
        HttpCtx {
            ctx: WasiHttpCtx::new(),
            hooks: Hooks { egress },
        }
    }
}

pub(crate) struct Hooks {
    egress: Egress,
}

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> ResponseFuture {
        drop(fut);
        let egress = self.egress.clone();
        // The guest's timeouts can only shorten the host's.
        let timeout = options.and_then(|o| {
            [o.connect_timeout, o.first_byte_timeout]
                .into_iter()
                .flatten()
                .min()
        });
        Box::new(async move {
            let (response, task) = egress.send(request, timeout).await?;
            let io: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async move {
                match task.await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(Error::from(e)),
                    Err(e) => Err(Error::InternalError(Some(e.to_string()))),
                }
            });
            Ok((response.map(BodyExt::boxed_unsync), io))
        })
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http.ctx,
            table: &mut self.table,
            hooks: &mut self.http.hooks,
        }
    }
}
