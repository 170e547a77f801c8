//! The toolsmith half of the admin API: the blueprints, what approving
//! one would mean, and the `tool:create` approval and rejection (the
//! guardrail: actor, confirmation, reason). This is an operator channel:
//! no agent's MCP connection reaches it. What the answers mean is the
//! host's, behind [`ToolsmithAdmin`].

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use warden_api::{AdminError, Guardrail, ToolsmithAdmin};

use crate::Server;
use crate::admin::{Refusal, Reply};

/// `POST /toolsmith/blueprints/{id}/approve`: the guardrail, and the
/// blueprint digest the person looked at.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApproveBody {
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    confirm: bool,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    digest: Option<String>,
}

fn reply(result: Option<Result<Value, AdminError>>) -> Reply {
    match result {
        Some(Ok(v)) => (StatusCode::OK, Json(v)),
        Some(Err(e @ AdminError::Refused(_))) => (
            StatusCode::CONFLICT,
            Json(json!({ "error": e.to_string() })),
        ),
        Some(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": e.to_string() })),
        ),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "this server keeps no toolsmith blueprints" })),
        ),
    }
}

fn admin(server: &Server) -> Option<std::sync::Arc<dyn ToolsmithAdmin>> {
    server.toolsmith_admin()
}

pub(crate) async fn list(State(server): State<Server>) -> Reply {
    reply(admin(&server).map(|a| a.blueprints()))
}

pub(crate) async fn show(State(server): State<Server>, UrlPath(id): UrlPath<u64>) -> Reply {
    reply(admin(&server).map(|a| a.show(id)))
}

pub(crate) async fn approve(
    State(server): State<Server>,
    UrlPath(id): UrlPath<u64>,
    Json(body): Json<ApproveBody>,
) -> Reply {
    let guardrail = Guardrail {
        actor: body.actor,
        confirm: body.confirm,
        reason: body.reason,
    };
    let by = match guardrail.check("approving a tool's creation (tool:create)") {
        Ok(by) => by,
        Err(e) => return Refusal::Guardrail(e).reply(),
    };
    reply(admin(&server).map(|a| a.approve(id, body.digest, by)))
}

pub(crate) async fn reject(
    State(server): State<Server>,
    UrlPath(id): UrlPath<u64>,
    Json(guardrail): Json<Guardrail>,
) -> Reply {
    let by = match guardrail.check("rejecting a blueprint") {
        Ok(by) => by,
        Err(e) => return Refusal::Guardrail(e).reply(),
    };
    reply(admin(&server).map(|a| a.reject(id, by)))
}
