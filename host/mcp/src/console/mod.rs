//! The operator console: `/console` on the HTTP listener, where a person
//! signs in with an admin token (or an operator's OAuth access token) and
//! answers the approvals that wait for
//! an operator, seeing every call's full arguments; sees the agents and
//! revokes their grants; reads the audit trail and verifies its chain;
//! sees plugins and bridged servers; answers the toolsmith's blueprints. Server-rendered HTML
//! with one small script and one style sheet, both embedded in the
//! binary: it works offline and loads nothing from elsewhere.
//!
//! Attacks it stops:
//! - another site making a signed-in browser act (CSRF): every state
//!   change carries the session's CSRF token, compared in constant time,
//!   and the session cookie is `SameSite=Strict`; a change without the
//!   cookie or the token is refused and changes nothing;
//! - script injection through what agents put in their calls (tool
//!   names, arguments, reasons): every value is HTML-escaped, and the
//!   Content-Security-Policy allows only the console's own script and
//!   style (no inline script, no event-handler attributes, no framing);
//! - session theft by script (`HttpOnly`) or over plain HTTP (`Secure`
//!   when served behind TLS), and session guessing (256-bit ids from the
//!   operating system's random source; sessions expire);
//! - DNS rebinding: the Host header must name this server, as on `/mcp`.
//!
//! Every answer given here is audited with the signed-in person's name
//! (`console:NAME`).

mod assets;
mod html;
mod operate;
mod pages;
mod routes;
mod signins;
mod views;

use std::sync::Arc;
use std::time::Duration;

pub(crate) use routes::router;

/// How the console signs people in.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// The admin tokens a person signs in with (beside operators' access
    /// tokens, when `[serve.oauth]` names operators).
    pub admin_tokens: Vec<String>,
    /// Mark the session cookie `Secure` (the console is reached over TLS,
    /// for example through a reverse proxy).
    pub secure_cookie: bool,
    /// How long a sign-in lasts.
    pub session_ttl: Duration,
    /// The console's base URL as people reach it (scheme, host, port):
    /// links to pending approvals start with it. `None`: the listener's
    /// address, unless it is a wildcard one (then no links are sent).
    pub url: Option<String>,
}

/// The console's shared state.
pub(crate) struct Console {
    server: crate::Server,
    tokens: crate::auth::Tokens,
    /// Checks operators' access tokens (`[serve.oauth] operators`).
    oauth: Option<Arc<dyn crate::TokenVerifier>>,
    signins: signins::SignIns,
    secure_cookie: bool,
    hosts: Vec<String>,
}

impl Console {
    pub(crate) fn new(
        server: crate::Server,
        options: &ConsoleOptions,
        hosts: Vec<String>,
        oauth: Option<Arc<dyn crate::TokenVerifier>>,
    ) -> Arc<Console> {
        let admins: Vec<(String, String)> = options
            .admin_tokens
            .iter()
            .map(|t| (t.clone(), "admin".to_owned()))
            .collect();
        Arc::new(Console {
            server,
            tokens: crate::auth::Tokens::new(&admins, None),
            oauth,
            signins: signins::SignIns::new(options.session_ttl),
            secure_cookie: options.secure_cookie,
            hosts,
        })
    }
}
