//! The host's resolver for git remotes: answers in the order the system
//! gives them, which is the order the pins keep.

use std::net::IpAddr;

use warden_api::BoxFuture;
use warden_vcs::Resolve;

/// Resolves through the host's own resolver (`getaddrinfo`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemDns;

impl Resolve for SystemDns {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Vec<IpAddr>, std::io::Error>> {
        Box::pin(async move {
            let mut out: Vec<IpAddr> = Vec::new();
            for addr in tokio::net::lookup_host((host, port)).await? {
                if !out.contains(&addr.ip()) {
                    out.push(addr.ip());
                }
            }
            Ok(out)
        })
    }
}
