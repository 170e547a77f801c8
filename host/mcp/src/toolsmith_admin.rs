//! The toolsmith half of the admin API: the blueprints, what approving
//! one would mean, the `tool:create` approval and rejection, retiring or
//! rolling back a generated tool (each with the guardrail: actor,
//! confirmation, reason), and checking the signed statements. This is an operator channel:
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

/// `POST /toolsmith/tools/{name}/retire`: the guardrail, and whether to
/// roll back to the version it superseded.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetireBody {
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    confirm: bool,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    rollback: bool,
}

pub(crate) async fn retire(
    State(server): State<Server>,
    UrlPath(name): UrlPath<String>,
    Json(body): Json<RetireBody>,
) -> Reply {
    let guardrail = Guardrail {
        actor: body.actor,
        confirm: body.confirm,
        reason: body.reason,
    };
    let what = if body.rollback {
        "rolling a generated tool back"
    } else {
        "retiring a generated tool"
    };
    let by = match guardrail.check(what) {
        Ok(by) => by,
        Err(e) => return Refusal::Guardrail(e).reply(),
    };
    reply(admin(&server).map(|a| a.retire(&name, body.rollback, by)))
}

pub(crate) async fn verify(State(server): State<Server>) -> Reply {
    reply(admin(&server).map(|a| a.verify()))
}
