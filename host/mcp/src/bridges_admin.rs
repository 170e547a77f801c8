//! The bridge half of the admin API: status, approve, revoke and restart
//! bridged MCP servers. The server only routes; what approving means (the
//! pins, re-publishing) is the host's, behind [`warden_api::BridgeAdmin`].

use axum::extract::{Path as UrlPath, State};
use serde::{Deserialize, Serialize};
use warden_api::Guardrail;

use crate::Server;
use crate::admin::{Refusal, Reply};
use crate::plugins::reply;

/// `POST /bridges/{name}/approve` and `/revoke`: the tools (upstream or
/// advertised names; none means all) and the guardrail.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinBody {
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(flatten)]
    pub guardrail: Guardrail,
}

const NONE: &str = "this server bridges no MCP servers";

pub(crate) async fn status(State(server): State<Server>) -> Reply {
    let admin = server.bridge_admin();
    reply(
        match admin {
            Some(a) => Some(a.status(None).await),
            None => None,
        },
        NONE,
    )
}

pub(crate) async fn one(State(server): State<Server>, UrlPath(name): UrlPath<String>) -> Reply {
    let admin = server.bridge_admin();
    reply(
        match admin {
            Some(a) => Some(a.status(Some(name)).await),
            None => None,
        },
        NONE,
    )
}

pub(crate) async fn approve(
    State(server): State<Server>,
    UrlPath(name): UrlPath<String>,
    body: axum::body::Bytes,
) -> Reply {
    pin(server, name, body, true).await
}

pub(crate) async fn revoke(
    State(server): State<Server>,
    UrlPath(name): UrlPath<String>,
    body: axum::body::Bytes,
) -> Reply {
    pin(server, name, body, false).await
}

async fn pin(server: Server, name: String, body: axum::body::Bytes, approve: bool) -> Reply {
    let body: PinBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return Refusal::Invalid(format!(
                "the body must be {{tools, actor, confirm, reason}}: {e}"
            ))
            .reply();
        }
    };
    let what = if approve { "approving" } else { "revoking" };
    let by = match body
        .guardrail
        .check(&format!("{what} tools of bridge `{name}`"))
    {
        Ok(by) => by,
        Err(e) => return Refusal::Guardrail(e).reply(),
    };
    let admin = server.bridge_admin();
    reply(
        match admin {
            Some(a) if approve => Some(a.approve(name, body.tools, by).await),
            Some(a) => Some(a.revoke(name, body.tools, by).await),
            None => None,
        },
        NONE,
    )
}

pub(crate) async fn restart(State(server): State<Server>, UrlPath(name): UrlPath<String>) -> Reply {
    let admin = server.bridge_admin();
    reply(
        match admin {
            Some(a) => Some(a.restart(name).await),
            None => None,
        },
        NONE,
    )
}
