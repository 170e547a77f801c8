//! `warden serve --http ADDR`: MCP over Streamable HTTP at `/mcp`, with
//! sessions for clients on older protocol revisions and sessionless
//! requests for 2026-07-28, and the admin API under `/admin` for holders
//! of an admin token, and (when enabled) the operator console under
//! `/console`. With a session keeper (`HttpOptions::sessions`), a
//! session made by another replica or before a restart is taken over.
//!
//! Attacks it stops: use by anyone who can reach the port (every request
//! needs a configured bearer token; binding beyond loopback without tokens
//! refuses to start), DNS rebinding from a browser (Host must name this
//! server, a present Origin must be on the allowlist — empty by default),
//! and memory exhaustion by huge request bodies (a body cap). With
//! `oauth`, OAuth access tokens are accepted beside the static ones and
//! refusals carry the challenges of `resource.rs`. A refusal given before
//! the body was read closes its connection, saying so (`unread_body.rs`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth::Tokens;
use crate::http_workers::Workers;
use crate::resource::ResourceServer;
use crate::{McpError, Server, admin_router};

/// The agent a request acts as (set by the auth layer, read by the
/// handler), whether a bearer token said so (else: the open agent of
/// a loopback listener without tokens), and the signed-in principal when
/// the token was an OAuth access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAgent {
    pub agent: String,
    pub token: bool,
    pub principal: Option<warden_api::Principal>,
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
    /// OAuth access tokens beside the static ones: discovery metadata,
    /// challenges and the verifier (see `resource.rs`).
    pub oauth: Option<Arc<ResourceServer>>,
    /// The operator console at `/console` (see `console/`).
    pub console: Option<crate::ConsoleOptions>,
    /// Threads serving connections (see `http_workers.rs`); `None`: one
    /// per core.
    pub workers: Option<std::num::NonZeroUsize>,
    /// How long a connection polls busily after each answer (see
    /// `busy_poll.rs`); zero: not at all.
    pub busy_poll: std::time::Duration,
}

/// What the auth layer checks: static tokens, then OAuth access tokens.
#[derive(Debug)]
struct Auth {
    tokens: Tokens,
    oauth: Option<Arc<ResourceServer>>,
}

async fn authenticate(State(auth): State<Arc<Auth>>, mut request: Request, next: Next) -> Response {
    let found = match auth.tokens.agent(request.headers()) {
        Some(agent) => Ok(TokenAgent {
            agent,
            token: auth.tokens.uses_tokens(),
            principal: None,
        }),
        None => match (&auth.oauth, bearer(request.headers())) {
            (Some(oauth), Some(presented)) => oauth
                .verifier
                .verify(presented)
                .await
                .map(|v| TokenAgent {
                    agent: v.agent,
                    token: true,
                    principal: Some(v.principal),
                })
                .map_err(|refusal| oauth.unauthorized(Some(&refusal))),
            (Some(oauth), None) => Err(oauth.unauthorized(None)),
            (None, _) => Err((
                StatusCode::UNAUTHORIZED,
                [(http::header::WWW_AUTHENTICATE, "Bearer")],
            )
                .into_response()),
        },
    };
    match found {
        Ok(agent) => {
            request.extensions_mut().insert(agent);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

/// The token of an `Authorization: Bearer` header (the scheme is
/// case-insensitive, RFC 7235).
fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

fn router(server: &Server, options: &HttpOptions) -> Router {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    hosts.push(options.addr.ip().to_string());
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
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
    let auth = Arc::new(Auth {
        tokens: Tokens::new(&options.tokens, options.open_agent.clone()),
        oauth: options.oauth.clone(),
    });
    let mut app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn(crate::coalesce::hold_answer))
        .layer(middleware::from_fn_with_state(auth, authenticate));
    if let Some(oauth) = &options.oauth {
        // Discovery needs no token: it is how a client learns to get one.
        for path in oauth.metadata_paths() {
            let oauth = oauth.clone();
            app = app.route(
                &path,
                axum::routing::get(move || async move { oauth.metadata_response() }),
            );
        }
    }
    if let Some(console) = &options.console {
        // Signed in with a session cookie, not a bearer token.
        app = app.merge(crate::console::router(crate::console::Console::new(
            server.clone(),
            console,
            hosts,
            options.oauth.as_ref().map(|o| o.verifier.clone()),
        )));
    }
    if !options.admin_tokens.is_empty() {
        let admins: Vec<(String, String)> = options
            .admin_tokens
            .iter()
            .map(|t| (t.clone(), "admin".to_owned()))
            .collect();
        let admin_tokens = Arc::new(Auth {
            tokens: Tokens::new(&admins, None),
            oauth: None,
        });
        app = app.nest(
            "/admin",
            admin_router(server.clone())
                .layer(middleware::from_fn_with_state(admin_tokens, authenticate)),
        );
    }
    // Outermost, so that every refusal above is seen.
    app.layer(middleware::from_fn(crate::unread_body::close_if_unread))
}

/// Serves until `shutdown` is cancelled. `ready` gets the bound address
/// (useful with port 0).
pub async fn serve_http(
    server: Server,
    options: HttpOptions,
    shutdown: CancellationToken,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), McpError> {
    if options.tokens.is_empty() && options.oauth.is_none() && !options.addr.ip().is_loopback() {
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
    if let Some(console) = &options.console {
        let base = console
            .url
            .clone()
            .or_else(|| (!bound.ip().is_unspecified()).then(|| format!("http://{bound}")));
        match base {
            Some(base) => {
                server.set_console_link(base);
            }
            None => tracing::info!(
                "asks are not linked to the console: set [console] url to the address people reach it at"
            ),
        }
    }
    let app = router(&server, &options);
    // Dropped (the host failed while serving), the workers stop too.
    let stop = shutdown.child_token();
    let _stop_on_drop = stop.clone().drop_guard();
    let workers = Workers::start(&app, bound, options.workers, options.busy_poll, &stop)?;
    ready(bound);
    workers.serve(listener, stop).await
}
