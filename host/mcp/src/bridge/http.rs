//! HTTP upstreams: a bridged server reached over Streamable HTTP.
//!
//! Attack: server-side request forgery through the bridge. An upstream URL,
//! or the DNS name in it, leads Warden to the host's own services, the
//! operator's network or the cloud metadata endpoint (which hands out
//! credentials); a redirect or a proxy from the environment sends the
//! session (and its bearer token) somewhere else; a hostile server floods
//! one event or makes the client reconnect forever.
//!
//! Warden builds the HTTP client itself: no proxy (environment variables
//! such as `HTTPS_PROXY` are ignored), no redirect followed (a 3xx is an
//! error), HTTPS unless the operator allows plain HTTP, no retries of a
//! request that was sent. Every session resolves the server's name once,
//! vets every address with the rules of `http.fetch` (a non-public address
//! only where the bridge's `network.allow` names it; one bad address
//! refuses them all, so a name cannot mix an internal address in) and pins
//! the client to the vetted addresses, so a later answer of the name server
//! cannot move the session. Stream reconnects and event sizes are bounded.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use warden_api::BoxFuture;
use warden_api::net::{EffectiveNet, Host, HostMatch, NetPattern, Scheme, Target, classify};

use super::connector::{Connection, Connector, Link, Process};

/// How long making a TCP (and TLS) connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a dropped event stream is reopened before the session fails,
/// and the longest wait between tries.
const STREAM_RETRIES: usize = 5;
const STREAM_RETRY_MAX: Duration = Duration::from_secs(10);

/// A server at a URL.
#[derive(Debug)]
pub struct HttpUpstream {
    target: Target,
    /// The URL as Warden wrote it back from its parts: the client reads
    /// exactly the host the checks read.
    url: String,
    net: EffectiveNet,
    bearer: Option<String>,
    insecure_http: bool,
}

/// The transport of one HTTP session, ready for the MCP handshake.
pub struct HttpLink(pub(crate) StreamableHttpClientTransport<reqwest::Client>);

impl std::fmt::Debug for HttpLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpLink")
    }
}

impl HttpUpstream {
    /// Checks the URL and the grants before anything connects. `allow`
    /// are the addresses (or blocks) that may be non-public, from the
    /// bridge's `network.allow`; `insecure_http` allows `http://`.
    pub fn new(
        url: &str,
        allow: &[NetPattern],
        insecure_http: bool,
        bearer: Option<String>,
    ) -> Result<HttpUpstream, String> {
        let (target, path) = Target::from_url(url).map_err(|e| e.to_string())?;
        if target.scheme == Scheme::Http && !insecure_http {
            return Err(format!(
                "`{url}` is plain HTTP: the session and its token would cross the network \
                 unencrypted; use https, or set `insecure-http = true` to allow it"
            ));
        }
        // The operator wrote the URL, so its host is granted; an address
        // literal only when public (a non-public one must be named in
        // `network.allow`, so writing a URL alone never unlocks loopback).
        let mut granted = allow.to_vec();
        let own = match &target.host {
            Host::Name(name) => Some(HostMatch::Name(name.clone())),
            Host::Ip(ip) if classify(*ip).is_none() => Some(HostMatch::Ip(*ip)),
            Host::Ip(_) => None,
        };
        if let Some(host) = own {
            granted.push(NetPattern::Host {
                scheme: Some(target.scheme),
                host,
                port: Some(target.port),
            });
        }
        let net = EffectiveNet::new(&granted, &[NetPattern::AllowAll]);
        let upstream = HttpUpstream {
            url: format!(
                "{}://{}:{}{path}",
                target.scheme.as_str(),
                target.host,
                target.port
            ),
            target,
            net,
            bearer,
            insecure_http,
        };
        if let Host::Ip(ip) = upstream.target.host {
            upstream.vet(ip)?;
        } else {
            upstream
                .net
                .check_target(&upstream.target)
                .map_err(|r| r.reason)?;
        }
        Ok(upstream)
    }

    /// The URL sessions connect to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn vet(&self, ip: IpAddr) -> Result<(), String> {
        self.net.check_address(&self.target, ip).map_err(|_| {
            let class = classify(ip).map_or("non-public", |c| c.as_str());
            let shown = Host::Ip(ip);
            format!(
                "blocked address: `{}` is {shown}, a {class} address; a bridge reaches only public \
                 addresses unless its `network = {{ allow = [\"{shown}\"] }}` names the address",
                self.target.host
            )
        })
    }

    /// The server's addresses, each vetted.
    async fn addresses(&self) -> Result<Vec<SocketAddr>, String> {
        let name = match &self.target.host {
            Host::Ip(ip) => {
                self.vet(*ip)?;
                return Ok(vec![SocketAddr::new(*ip, self.target.port)]);
            }
            Host::Name(name) => name.clone(),
        };
        let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), self.target.port))
            .await
            .map_err(|e| format!("`{name}` did not resolve: {e}"))?
            .collect();
        if found.is_empty() {
            return Err(format!("`{name}` has no addresses"));
        }
        for addr in &found {
            self.vet(addr.ip())?;
        }
        Ok(found)
    }

    fn client(&self, pinned: &[SocketAddr]) -> Result<reqwest::Client, String> {
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .referer(false)
            .https_only(!self.insecure_http)
            .http1_only()
            .connect_timeout(CONNECT_TIMEOUT)
            .tls_backend_preconfigured(tls()?.as_ref().clone());
        if let Host::Name(name) = &self.target.host {
            builder = builder.resolve_to_addrs(name, pinned);
        }
        builder
            .build()
            .map_err(|e| format!("could not build the HTTP client: {e}"))
    }

    /// A session's transport, its client pinned to freshly vetted
    /// addresses. `max_event` bounds one server-sent event.
    async fn link(&self, max_event: usize) -> Result<HttpLink, String> {
        let pinned = self.addresses().await?;
        let client = self.client(&pinned)?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str())
            .max_sse_event_size(max_event);
        let mut backoff = ExponentialBackoff::default();
        backoff.max_times = Some(STREAM_RETRIES);
        backoff.base_duration = Duration::from_millis(250);
        backoff.max_delay = Some(STREAM_RETRY_MAX);
        config.retry_config = Arc::new(backoff);
        if let Some(token) = &self.bearer {
            config = config.auth_header(token.clone());
        }
        Ok(HttpLink(StreamableHttpClientTransport::with_client(
            client, config,
        )))
    }
}

/// One TLS configuration for every HTTP upstream: ring, the webpki roots.
pub(crate) fn tls() -> Result<&'static Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
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
            .map_err(|e| format!("TLS is unavailable: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A server Warden does not run: nothing to end but the session itself
/// (closing the MCP service deletes it upstream).
struct Remote(String);

impl Process for Remote {
    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    fn describe(&self) -> String {
        self.0.clone()
    }
}

/// Connects sessions to an [`HttpUpstream`]; `max_event` bounds one
/// server-sent event (and a JSON answer is bounded by the transport).
#[derive(Debug)]
pub struct HttpConnector {
    upstream: HttpUpstream,
    max_event: usize,
}

impl HttpConnector {
    pub fn new(upstream: HttpUpstream, max_event: usize) -> HttpConnector {
        HttpConnector {
            upstream,
            max_event,
        }
    }
}

impl Connector for HttpConnector {
    fn connect<'a>(&'a self, _session: &'a str) -> BoxFuture<'a, Result<Connection, String>> {
        Box::pin(async move {
            let link = self.upstream.link(self.max_event).await?;
            Ok(Connection {
                link: Link::Http(link),
                process: Box::new(Remote(self.upstream.url.clone())),
            })
        })
    }

    fn runtime(&self) -> &'static str {
        "remote"
    }
}

#[cfg(test)]
mod tests {
    use super::HttpUpstream;
    use warden_api::net::NetPattern;

    fn refused(url: &str, allow: &[&str]) -> String {
        let allow: Vec<NetPattern> = allow.iter().map(|a| a.parse().unwrap()).collect();
        HttpUpstream::new(url, &allow, true, None).unwrap_err()
    }

    #[test]
    fn non_public_addresses_need_the_operator_to_name_them() {
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://169.254.169.254/latest",
            "http://10.0.0.1/mcp",
            "http://[::ffff:127.0.0.1]:8080/mcp",
            "http://2130706433:8080/mcp",
            "http://[::1]/mcp",
            "http://0.0.0.0/mcp",
        ] {
            let e = refused(url, &[]);
            assert!(e.starts_with("blocked address"), "{url}: {e}");
        }
        // Naming a different address unlocks nothing.
        assert!(refused("http://127.0.0.1:8080/mcp", &["10.0.0.1"]).starts_with("blocked"));
        let ok = HttpUpstream::new(
            "http://2130706433:8080/mcp",
            &["127.0.0.1".parse().unwrap()],
            true,
            None,
        )
        .unwrap();
        assert_eq!(ok.url(), "http://127.0.0.1:8080/mcp");
    }

    #[test]
    fn plain_http_and_confusing_urls_are_refused() {
        let e = HttpUpstream::new("http://mcp.example.com/mcp", &[], false, None).unwrap_err();
        assert!(e.contains("insecure-http"), "{e}");
        for url in [
            "https://user@mcp.example.com/mcp",
            "https://mcp.example.com\\@evil.example/mcp",
            "ftp://mcp.example.com/",
            "mcp.example.com/mcp",
        ] {
            assert!(HttpUpstream::new(url, &[], true, None).is_err(), "{url}");
        }
        let ok = HttpUpstream::new("https://MCP.example.com/mcp?x=1", &[], false, None).unwrap();
        assert_eq!(ok.url(), "https://mcp.example.com:443/mcp?x=1");
    }
}
