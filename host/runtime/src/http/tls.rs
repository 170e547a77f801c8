//! TLS for outgoing HTTPS: rustls with the ring provider and the Mozilla
//! root set, built once per process.

use std::sync::{Arc, OnceLock};

use rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;
use warden_api::net::Host;

static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();

fn config() -> Result<Arc<rustls::ClientConfig>, String> {
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
        })
        .clone()
}

/// A connector for `host`, verified against the name the request used (or
/// the IP address it named), never the address it resolved to.
pub(crate) fn connector(host: &Host) -> Result<(TlsConnector, ServerName<'static>), String> {
    let name = match host {
        Host::Name(n) => ServerName::try_from(n.clone()).map_err(|e| e.to_string())?,
        Host::Ip(ip) => ServerName::from(*ip),
    };
    Ok((TlsConnector::from(config()?), name))
}
