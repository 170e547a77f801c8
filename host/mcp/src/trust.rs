//! The progressive-trust half of the admin API: an agent's trust state, a
//! person's rating of its work, and a person's approval of a waiting
//! promotion (the guardrail: actor, confirmation, reason). What they mean
//! is the host's, behind [`TrustAdmin`].

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use warden_api::{Guardrail, TrustAdmin, TrustError};

use crate::Server;
use crate::admin::{Refusal, Reply};

/// `POST /trust/{agent}/feedback`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeedbackBody {
    score: f64,
    #[serde(default)]
    category: Option<String>,
}

fn reply(result: Option<Result<Value, TrustError>>) -> Reply {
    match result {
        Some(Ok(v)) => (StatusCode::OK, Json(v)),
        Some(Err(e @ TrustError::UnknownAgent(_))) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": e.to_string() })),
        ),
        Some(Err(e)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "error": e.to_string() })),
        ),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "this server keeps no progressive trust" })),
        ),
    }
}

fn admin(server: &Server) -> Option<std::sync::Arc<dyn TrustAdmin>> {
    server.trust_admin()
}

pub(crate) async fn show(State(server): State<Server>, UrlPath(agent): UrlPath<String>) -> Reply {
    reply(admin(&server).map(|a| a.show(&agent)))
}

pub(crate) async fn feedback(
    State(server): State<Server>,
    UrlPath(agent): UrlPath<String>,
    Json(body): Json<FeedbackBody>,
) -> Reply {
    reply(admin(&server).map(|a| a.feedback(&agent, body.category.as_deref(), body.score)))
}

/// `POST /trust/{agent}/approve`, with the guardrail as the JSON body.
pub(crate) async fn approve(
    State(server): State<Server>,
    UrlPath(agent): UrlPath<String>,
    Json(guardrail): Json<Guardrail>,
) -> Reply {
    let by = match guardrail.check(&format!("approving the promotion of `{agent}`")) {
        Ok(by) => by,
        Err(e) => return Refusal::Guardrail(e).reply(),
    };
    reply(admin(&server).map(|a| a.approve(&agent, by)))
}
