//! The `wasi:sockets` check: which addresses a call's raw sockets may use.
//!
//! Attack: a plugin opening its own TCP or UDP connections to reach what
//! its HTTP grant would refuse — another port, the host's loopback
//! services, a private network, the metadata endpoint — or listening for
//! connections. A connection or datagram is admitted only to an address
//! and port a grant covers (an IP or block, `insecure:allow-all` for public
//! addresses, or an exact granted name, resolved here to see whether the
//! address is one of its addresses); binds only to an ephemeral port on the
//! wildcard address (the implicit bind of a client); listening never. A
//! refusal is a WASI `access-denied` the guest sees, and its reason goes to
//! the call's denial log.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use warden_api::net::{EffectiveNet, SocketVerdict};
use wasmtime_wasi::sockets::SocketAddrUse;

use crate::denials::Denials;

type CheckFuture = Pin<Box<dyn Future<Output = bool> + Send + Sync>>;

/// The check handed to `WasiCtxBuilder::socket_addr_check`.
pub(crate) fn check(
    net: Arc<EffectiveNet>,
    denials: Denials,
) -> impl Fn(SocketAddr, SocketAddrUse) -> CheckFuture + Send + Sync + 'static {
    move |addr, use_| {
        let verdict = match use_ {
            SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => {
                if addr.ip().is_unspecified() && addr.port() == 0 {
                    SocketVerdict::Admit
                } else {
                    SocketVerdict::Refuse(warden_api::net::Refusal {
                        reason: format!(
                            "binding {addr} refused: a call may open client sockets only"
                        ),
                    })
                }
            }
            SocketAddrUse::TcpListen | SocketAddrUse::TcpAccept => {
                SocketVerdict::Refuse(warden_api::net::Refusal {
                    reason: "listening for connections is never granted to a call".into(),
                })
            }
            SocketAddrUse::TcpConnect | SocketAddrUse::UdpSend | SocketAddrUse::UdpReceive => {
                net.check_socket(addr)
            }
        };
        let denials = denials.clone();
        match verdict {
            SocketVerdict::Admit => Box::pin(async { true }),
            SocketVerdict::Refuse(r) => {
                denials.record(r.reason);
                Box::pin(async { false })
            }
            SocketVerdict::IfResolvesFrom(names) => {
                let lookup = tokio::spawn(resolves_from(addr, names, denials));
                Box::pin(async move { lookup.await.unwrap_or(false) })
            }
        }
    }
}

/// Whether `addr`'s IP is an address of one of the granted `names`.
async fn resolves_from(addr: SocketAddr, names: Vec<String>, denials: Denials) -> bool {
    let ip = addr.ip().to_canonical();
    for name in &names {
        if let Ok(found) = tokio::net::lookup_host((name.as_str(), addr.port())).await
            && found.map(|a| a.ip().to_canonical()).any(|a| a == ip)
        {
            return true;
        }
    }
    denials.record(format!(
        "connection to {addr} refused: it is not an address of the granted name(s) {}; \
         grant the address itself with `--grant-net {addr}` if this is intended",
        names.join(", ")
    ));
    false
}
