//! The plugin half of the admin API: list, install, remove plugins in a
//! running server. The server only routes; what installing means
//! (verification, the registry, swapping tools in) is the host's, behind
//! [`warden_api::PluginAdmin`].

use std::path::PathBuf;

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use warden_api::{AdminError, Guardrail};

use crate::Server;

/// `POST /plugins`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallBody {
    /// A component file or a directory of components, on the server's
    /// machine.
    pub path: PathBuf,
}

use crate::admin::Reply;

/// An admin reply: the value, the refusal (422), or `missing` (404) when
/// the server manages no such thing.
pub(crate) fn reply(result: Option<Result<Value, AdminError>>, missing: &str) -> Reply {
    match result {
        Some(Ok(v)) => (StatusCode::OK, Json(v)),
        Some(Err(e)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "error": error_text(&e) })),
        ),
        None => (StatusCode::NOT_FOUND, Json(json!({ "error": missing }))),
    }
}

/// The error and its causes, each said once.
fn error_text(e: &AdminError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let shown = cause.to_string();
        if !text.contains(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        source = cause.source();
    }
    text
}

pub(crate) async fn list(State(server): State<Server>) -> Reply {
    let admin = server.plugin_admin();
    reply(
        match admin {
            Some(a) => Some(a.list().await),
            None => None,
        },
        "this server does not manage plugins",
    )
}

pub(crate) async fn install(State(server): State<Server>, Json(body): Json<InstallBody>) -> Reply {
    let admin = server.plugin_admin();
    reply(
        match admin {
            Some(a) => Some(a.install(body.path).await),
            None => None,
        },
        "this server does not manage plugins",
    )
}

/// `DELETE /plugins/{name}`, with the guardrail (actor, confirm, reason)
/// as the JSON body.
pub(crate) async fn remove(
    State(server): State<Server>,
    UrlPath(name): UrlPath<String>,
    body: axum::body::Bytes,
) -> Reply {
    let guardrail: Guardrail = if body.is_empty() {
        Guardrail::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(g) => g,
            Err(e) => {
                return crate::admin::Refusal::Invalid(format!(
                    "the body must be the guardrail {{actor, confirm, reason}}: {e}"
                ))
                .reply();
            }
        }
    };
    let by = match guardrail.check(&format!("removing plugin `{name}`")) {
        Ok(by) => by,
        Err(e) => return crate::admin::Refusal::Guardrail(e).reply(),
    };
    let admin = server.plugin_admin();
    reply(
        match admin {
            Some(a) => Some(a.remove(name, by).await),
            None => None,
        },
        "this server does not manage plugins",
    )
}
