//! The console's routes beyond approvals: agents and their grants
//! (revoke), the audit trail, plugins and bridged servers, toolsmith
//! blueprints (approve, reject). Every state change needs the session
//! and its CSRF token, and is made on the signed-in person's word.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use warden_api::{Attribution, AuditQuery, Guardrail};

use super::routes::{page, refused};
use super::signins::SignIn;
use super::{Console, views};

/// How many audit records the audit page shows.
const AUDIT_ROWS: usize = 200;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn unavailable(what: &str) -> Response {
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        super::pages::layout(
            what,
            None,
            &format!("<p class=\"notice error\">{}</p>", super::html::esc(what)),
        ),
    )
}

fn problem(
    status: StatusCode,
    signin: &SignIn,
    title: &str,
    e: impl std::fmt::Display,
) -> Response {
    page(
        status,
        super::pages::layout(
            title,
            Some(signin),
            &format!(
                "<h1>{}</h1><p class=\"notice error\">{}</p>",
                super::html::esc(title),
                super::html::esc(&e.to_string())
            ),
        ),
    )
}

impl Console {
    /// The signed-in person of a page request, or the way to sign in.
    fn viewer(&self, headers: &HeaderMap) -> Result<SignIn, Box<Response>> {
        self.signed_in(headers)
            .map(|(_, s)| s)
            .ok_or_else(|| Box::new(Redirect::to("/console/login").into_response()))
    }

    /// The signed-in person of a state change whose form carried their
    /// CSRF token; anything else is refused.
    pub(super) fn actor(&self, headers: &HeaderMap, csrf: &str) -> Result<SignIn, Box<Response>> {
        let Some((_, signin)) = self.signed_in(headers) else {
            return Err(Box::new(refused(
                "you are not signed in: sign in, then act from the console's pages",
            )));
        };
        if !crate::auth::ct_eq(csrf.as_bytes(), signin.csrf.as_bytes()) {
            return Err(Box::new(refused(
                "the form's CSRF token is missing or wrong; reload the page and try again",
            )));
        }
        Ok(signin)
    }
}

pub(crate) async fn agents_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let signin = match console.viewer(&headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(view) = console.server.operator_view() else {
        return unavailable("this server shows no agents");
    };
    let (agents, grants) = match (view.agents(), view.grants()) {
        (Ok(a), Ok(g)) => (a, g),
        (Err(e), _) | (_, Err(e)) => {
            return problem(StatusCode::INTERNAL_SERVER_ERROR, &signin, "Agents", e);
        }
    };
    let message = query
        .get("revoked")
        .map(|id| format!("Revoked grant {id}."));
    page(
        StatusCode::OK,
        views::agents(
            &signin,
            &agents,
            &grants,
            now_ms(),
            message.as_deref().map(|m| (m, false)),
        ),
    )
}

pub(crate) async fn revoke(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ChangeForm>,
) -> Response {
    let signin = match console.actor(&headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(view) = console.server.operator_view() else {
        return unavailable("this server shows no grants");
    };
    let by = match form.by(&signin, &format!("revoking grant {id}")) {
        Ok(by) => by,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &signin, "Not revoked", e),
    };
    match view.revoke_grant(&id, by) {
        Ok(()) => {
            tracing::info!(actor = %signin.actor, grant = %id, "grant revoked in the console");
            Redirect::to(&format!(
                "/console/agents?revoked={}",
                super::routes::urlencode(&id)
            ))
            .into_response()
        }
        Err(e) => problem(StatusCode::CONFLICT, &signin, "Not revoked", e),
    }
}

/// An attribution as the console records it: `console:NAME`.
fn console_attribution(mut by: Attribution) -> Attribution {
    by.actor = format!("console:{}", by.actor);
    by
}

pub(crate) async fn audit_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let signin = match console.viewer(&headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(view) = console.server.operator_view() else {
        return unavailable("this server shows no audit trail");
    };
    let text = |name: &str| {
        query
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let filter = AuditQuery {
        agent: text("agent"),
        tool: text("tool"),
        decision: text("decision"),
        limit: AUDIT_ROWS,
    };
    let verify = query.get("verify").is_some_and(|v| v == "1");
    match (view.chain(verify), view.audit(&filter)) {
        (Ok(chain), Ok(entries)) => page(
            StatusCode::OK,
            views::audit(&signin, &filter, &chain, &entries),
        ),
        (Err(e), _) | (_, Err(e)) => {
            problem(StatusCode::INTERNAL_SERVER_ERROR, &signin, "Audit", e)
        }
    }
}

pub(crate) async fn plugins_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let signin = match console.viewer(&headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let plugins = match console.server.plugin_admin() {
        Some(admin) => match admin.list().await {
            Ok(v) => v,
            Err(e) => return problem(StatusCode::INTERNAL_SERVER_ERROR, &signin, "Plugins", e),
        },
        None => serde_json::Value::Null,
    };
    let bridges = match console.server.bridge_admin() {
        Some(admin) => match admin.status(None).await {
            Ok(v) => Some(v),
            Err(e) => return problem(StatusCode::INTERNAL_SERVER_ERROR, &signin, "Plugins", e),
        },
        None => None,
    };
    let message = query.get("done").cloned();
    page(
        StatusCode::OK,
        views::plugins(
            &signin,
            &plugins,
            bridges.as_ref(),
            message.as_deref().map(|m| (m, false)),
        ),
    )
}

#[derive(Deserialize)]
pub(crate) struct ChangeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    confirm: Option<String>,
    #[serde(default)]
    path: String,
}

impl ChangeForm {
    /// The person's word for `operation`: their name, the confirmation
    /// and a reason, or why not.
    fn by(
        &self,
        signin: &SignIn,
        operation: &str,
    ) -> Result<Attribution, warden_api::GuardrailError> {
        Guardrail {
            actor: Some(signin.actor.clone()),
            confirm: self.confirm.is_some(),
            reason: Some(self.reason.trim().to_owned()).filter(|r| !r.is_empty()),
        }
        .check(operation)
        .map(console_attribution)
    }
}

fn done(what: String) -> Response {
    Redirect::to(&format!(
        "/console/plugins?done={}",
        super::routes::urlencode(&what)
    ))
    .into_response()
}

pub(crate) async fn plugin_remove(
    State(console): State<Arc<Console>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ChangeForm>,
) -> Response {
    let signin = match console.actor(&headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(admin) = console.server.plugin_admin() else {
        return unavailable("this server does not manage plugins");
    };
    let by = match form.by(&signin, &format!("removing plugin {name}")) {
        Ok(by) => by,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &signin, "Not removed", e),
    };
    match admin.remove(name.clone(), by).await {
        Ok(_) => done(format!("Removed {name}.")),
        Err(e) => problem(StatusCode::CONFLICT, &signin, "Not removed", e),
    }
}

pub(crate) async fn plugin_install(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<ChangeForm>,
) -> Response {
    let signin = match console.actor(&headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(admin) = console.server.plugin_admin() else {
        return unavailable("this server does not manage plugins");
    };
    let path = form.path.trim();
    if path.is_empty() {
        return problem(
            StatusCode::BAD_REQUEST,
            &signin,
            "Not installed",
            "give the component's path",
        );
    }
    tracing::info!(actor = %signin.actor, path, "plugin install from the console");
    match admin.install(std::path::PathBuf::from(path)).await {
        Ok(_) => done(format!("Installed {path}.")),
        Err(e) => problem(StatusCode::CONFLICT, &signin, "Not installed", e),
    }
}

pub(crate) async fn bridge_approve(
    State(console): State<Arc<Console>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ChangeForm>,
) -> Response {
    let signin = match console.actor(&headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(admin) = console.server.bridge_admin() else {
        return unavailable("this server bridges no MCP server");
    };
    let by = match form.by(&signin, &format!("approving the tools of {name}")) {
        Ok(by) => by,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &signin, "Not approved", e),
    };
    match admin.approve(name.clone(), Vec::new(), by).await {
        Ok(_) => done(format!("Approved the tools of {name}.")),
        Err(e) => problem(StatusCode::CONFLICT, &signin, "Not approved", e),
    }
}

pub(crate) async fn toolsmith_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let signin = match console.viewer(&headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(admin) = console.server.toolsmith_admin() else {
        return unavailable("this server has no toolsmith");
    };
    let message = query.get("done").map(|d| format!("Blueprint {d}."));
    match admin.blueprints() {
        Ok(list) => page(
            StatusCode::OK,
            views::toolsmith(&signin, &list, message.as_deref().map(|m| (m, false))),
        ),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, &signin, "Toolsmith", e),
    }
}

#[derive(Deserialize)]
pub(crate) struct BlueprintForm {
    /// The blueprint digest the person looked at.
    #[serde(default)]
    seen: String,
    #[serde(flatten)]
    change: ChangeForm,
}

pub(crate) async fn blueprint(
    State(console): State<Arc<Console>>,
    Path((id, action)): Path<(u64, String)>,
    headers: HeaderMap,
    Form(form): Form<BlueprintForm>,
) -> Response {
    let signin = match console.actor(&headers, &form.change.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(admin) = console.server.toolsmith_admin() else {
        return unavailable("this server has no toolsmith");
    };
    let by = match form
        .change
        .by(&signin, &format!("answering blueprint {id}"))
    {
        Ok(by) => by,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &signin, "Blueprint not changed", e),
    };
    let seen = Some(form.seen.trim().to_owned()).filter(|s| !s.is_empty());
    let done = match action.as_str() {
        "approve" => admin.approve(id, seen, by).map(|_| "approved"),
        "reject" => admin.reject(id, by).map(|_| "rejected"),
        _ => return (StatusCode::NOT_FOUND, "no such action").into_response(),
    };
    match done {
        Ok(done) => Redirect::to(&format!("/console/toolsmith?done={id}+{done}")).into_response(),
        Err(e) => problem(StatusCode::CONFLICT, &signin, "Blueprint not changed", e),
    }
}
