//! Outgoing HTTP under a network grant: every request and every redirect
//! hop is checked, its host resolved once, and the connection made to the
//! address that was checked.
//!
//! Attack: server-side request forgery and DNS rebinding. A guest asks for
//! a granted name whose DNS answer points at the host's own services, a
//! private network or the cloud metadata endpoint; or a granted server
//! redirects there; or the name resolves to a public address for the check
//! and to 127.0.0.1 for the connection. Here the grant is checked against
//! the request's host, each resolved address against the address rules,
//! and the socket opened to the very address that passed — there is no
//! second lookup to rebind. Redirects are new requests through the same
//! path, counted against a cap.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use tokio::net::TcpStream;
use warden_api::net::{EffectiveNet, Host, NetError, NetPattern, Scheme, Target};
use wasmtime_wasi_http::Error;
use wasmtime_wasi_http::io::TokioIo;

use super::body::CappedBody;
use super::tls;
use crate::denials::Denials;

/// Per-request limits of outgoing HTTP. See [`HttpLimits::DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest response body, in bytes; reading past it is an error.
    pub max_response_bytes: u64,
    /// Connect, headers and body of one request, all together.
    pub timeout: Duration,
    /// Redirect responses a call may follow.
    pub max_redirects: u32,
}

impl HttpLimits {
    /// Defaults: 16 MiB bodies, 30 s per request, 10 redirects per call.
    pub const DEFAULT: HttpLimits = HttpLimits {
        max_response_bytes: 16 << 20,
        timeout: Duration::from_secs(30),
        max_redirects: 10,
    };
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits::DEFAULT
    }
}

/// The outgoing HTTP of one call. Cheap to clone; clones share the redirect
/// count and the denial log.
#[derive(Debug, Clone)]
pub struct Egress {
    net: Arc<EffectiveNet>,
    limits: HttpLimits,
    redirects: Arc<AtomicU32>,
    denials: Denials,
}

impl Egress {
    /// The egress of a call holding `granted` for a plugin that requested
    /// `requested`.
    pub fn new(granted: &[NetPattern], requested: &[NetPattern], limits: HttpLimits) -> Egress {
        Egress::with_denials(
            Arc::new(EffectiveNet::new(granted, requested)),
            limits,
            Denials::default(),
        )
    }

    pub(crate) fn with_denials(
        net: Arc<EffectiveNet>,
        limits: HttpLimits,
        denials: Denials,
    ) -> Egress {
        Egress {
            net,
            limits,
            redirects: Arc::new(AtomicU32::new(0)),
            denials,
        }
    }

    /// Why requests were refused so far.
    pub fn denials(&self) -> Vec<String> {
        self.denials.all()
    }

    fn refuse(&self, reason: String, error: Error) -> Error {
        self.denials.record(reason);
        error
    }

    /// Checks and sends one request. `timeout`, if the guest set one, can
    /// only shorten the limit. Returns the response (its body capped) and
    /// a future that drives the connection and reports its errors.
    pub async fn send<B>(
        &self,
        mut request: Request<B>,
        timeout: Option<Duration>,
    ) -> Result<(Response<CappedBody>, ConnectionTask), Error>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let timeout = timeout.map_or(self.limits.timeout, |t| t.min(self.limits.timeout));
        let deadline = tokio::time::Instant::now() + timeout;
        let uri = request.uri();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let target = Target::from_parts(
            uri.scheme_str().unwrap_or_default(),
            uri.authority().map_or("", |a| a.as_str()),
            &path,
        )
        .map_err(|e| {
            // The reason, never the URL: its path or query may hold a token.
            let reason = match e {
                NetError::InvalidUrl { reason, .. } => format!("request refused: {reason}"),
                other => other.to_string(),
            };
            self.refuse(reason, Error::HttpRequestUriInvalid)
        })?;
        let followed = self.redirects.load(Ordering::Relaxed);
        if followed > self.limits.max_redirects {
            return Err(self.refuse(
                format!(
                    "request to `{}` refused: this call already followed {followed} redirects, over the cap of {}",
                    target.host, self.limits.max_redirects
                ),
                Error::LoopDetected,
            ));
        }
        self.net
            .check_target(&target)
            .map_err(|r| self.refuse(r.reason, Error::HttpRequestDenied))?;
        let addr = tokio::time::timeout_at(deadline, self.pick_address(&target))
            .await
            .map_err(|_| Error::DnsTimeout)??;
        tracing::debug!(target: "warden::net", %target, %addr, "outgoing request");

        let tcp = tokio::time::timeout_at(deadline, TcpStream::connect(addr))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Connect)?;
        // The request line carries the path only; the Host header (set by
        // wasi:http from the authority) names the host.
        *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;
        let exchange = async {
            if target.scheme == Scheme::Https {
                let (connector, name) =
                    tls::connector(&target.host).map_err(|e| Error::InternalError(Some(e)))?;
                let stream = connector.connect(name, tcp).await.map_err(Error::Tls)?;
                exchange(TokioIo::new(stream), request).await
            } else {
                exchange(TokioIo::new(tcp), request).await
            }
        };
        let (response, task) = tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| Error::ConnectionReadTimeout)??;
        if response.status().is_redirection()
            && response.headers().contains_key(http::header::LOCATION)
        {
            self.redirects.fetch_add(1, Ordering::Relaxed);
        }
        let limit = self.limits.max_response_bytes;
        Ok((response.map(|b| CappedBody::new(b, limit, deadline)), task))
    }

    /// Resolves the target's host once and returns the first address the
    /// address rules admit; the connection goes to exactly that address.
    async fn pick_address(&self, target: &Target) -> Result<SocketAddr, Error> {
        let addrs: Vec<IpAddr> = match &target.host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => tokio::net::lookup_host((name.as_str(), target.port))
                .await
                .map_err(|e| {
                    self.refuse(
                        format!("`{name}` could not be resolved: {e}"),
                        Error::DnsError {
                            rcode: Some(e.to_string()),
                            info_code: None,
                        },
                    )
                })?
                .map(|a| a.ip())
                .collect(),
        };
        let mut first_refusal = None;
        for ip in addrs {
            match self.net.check_address(target, ip) {
                Ok(()) => return Ok(SocketAddr::new(ip, target.port)),
                Err(r) => {
                    first_refusal.get_or_insert(r);
                }
            }
        }
        let reason = first_refusal.map_or_else(
            || format!("`{}` resolved to no address", target.host),
            |r| r.reason,
        );
        Err(self.refuse(reason, Error::DestinationIpProhibited))
    }
}

/// Drives an HTTP/1 connection until the response has been read.
pub type ConnectionTask = tokio::task::JoinHandle<Result<(), hyper::Error>>;

async fn exchange<IO, B>(
    io: IO,
    request: Request<B>,
) -> Result<(Response<hyper::body::Incoming>, ConnectionTask), Error>
where
    IO: hyper::rt::Read + hyper::rt::Write + Send + Unpin + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
    let task = tokio::spawn(conn);
    let response = sender.send_request(request).await?;
    Ok((response, task))
}
