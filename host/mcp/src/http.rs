//! `warden serve --http ADDR`: MCP over Streamable HTTP at `/mcp`, with
//! sessions for clients on older protocol revisions and sessionless
//! requests for 2026-07-28, and the admin API under `/admin` for holders
//! of an admin token. With a session keeper (`HttpOptions::sessions`), a
//! session made by another replica or before a restart is taken over.
//!
//! Attacks it stops: use by anyone who can reach the port (every request
//! needs a configured bearer token; binding beyond loopback without tokens
//! refuses to start), DNS rebinding from a browser (Host must name this
//! server, a present Origin must be on the allowlist — empty by default),
//! and memory exhaustion by huge request bodies (a body cap).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use http::StatusCode;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth::Tokens;
use crate::{McpError, Server, admin_router};

/// The agent a request acts as (set by the auth layer, read by the
/// handler), and whether a bearer token said so (else: the open agent of
/// a loopback listener without tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAgent {
    pub agent: String,
    pub token: bool,
}

/// Listener settings.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// (token, agent) pairs.
    pub tokens: Vec<(String, String)>,
    /// Tokens that may use the admin API over HTTP.
    pub admin_tokens: Vec<String>,
    /// The agent of every request when no tokens are configured (loopback
    /// only).
    pub open_agent: Option<String>,
    /// Browser origins allowed to call (`scheme://host:port`); none by
    /// default, so any request carrying an Origin header is refused.
    pub allowed_origins: Vec<String>,
    /// Host names the server answers to besides loopback names.
    pub allowed_hosts: Vec<String>,
    pub max_body_bytes: usize,
    /// Where sessions of clients before 2026-07-28 are kept, so another
    /// replica on the same state (or this host after a restart) takes
    /// them over; without it a session lives in this process only.
    pub sessions: Option<Arc<dyn warden_api::SessionStates>>,
}

async fn authenticate(
    State(tokens): State<Arc<Tokens>>,
    mut request: Request,
    next: Next,
) -> Response {
    match tokens.agent(request.headers()) {
        Some(agent) => {
            let token = tokens.uses_tokens();
            request.extensions_mut().insert(TokenAgent { agent, token });
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(http::header::WWW_AUTHENTICATE, "Bearer")],
        )
            .into_response(),
    }
}

fn router(server: &Server, options: &HttpOptions) -> Router {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    hosts.push(options.addr.ip().to_string());
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_legacy_session_mode(true)
        .with_max_request_body_bytes(options.max_body_bytes);
    config.session_store = options
        .sessions
        .clone()
        .map(|kept| Arc::new(crate::sessions::Kept(kept)) as _);
    config = if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins.clone())
    };
    let for_sessions = server.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(for_sessions.session(None)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let tokens = Arc::new(Tokens::new(&options.tokens, options.open_agent.clone()));
    let mut app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(tokens, authenticate));
    if !options.admin_tokens.is_empty() {
        let admins: Vec<(String, String)> = options
            .admin_tokens
            .iter()
            .map(|t| (t.clone(), "admin".to_owned()))
            .collect();
        let admin_tokens = Arc::new(Tokens::new(&admins, None));
        app = app.nest(
            "/admin",
            admin_router(server.clone())
                .layer(middleware::from_fn_with_state(admin_tokens, authenticate)),
        );
    }
    app
}

/// Serves until `shutdown` is cancelled. `ready` gets the bound address
/// (useful with port 0).
pub async fn serve_http(
    server: Server,
    options: HttpOptions,
    shutdown: CancellationToken,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), McpError> {
    if options.tokens.is_empty() && !options.addr.ip().is_loopback() {
        return Err(McpError::UnauthenticatedPublicBind { addr: options.addr });
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| McpError::Bind {
            addr: options.addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr()?;
    let mut options = options;
    options.addr = bound;
    let app = router(&server, &options);
    ready(bound);
    // Small JSON-RPC messages: without TCP_NODELAY, Nagle and delayed ACKs
    // add ~40 ms to each exchange on a keep-alive connection.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await?;
    Ok(())
}
