//! The console's routes: sign-in and sign-out, the pending approvals
//! (page, live fragment, answers) and the embedded assets, behind the
//! checks every console response gets (Host, security headers).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use super::signins::SignIn;
use super::{Console, assets, operate, pages};
use crate::admin::{AnswerBody, Refusal};

/// The session cookie's name.
const COOKIE: &str = "warden_console";

/// Only the console's own script and style; no framing, no plugins, no
/// form posts elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The console under `/console`.
pub(crate) fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/console", get(approvals_page))
        .route("/console/login", get(signin_page).post(signin))
        .route("/console/logout", post(signout))
        .route("/console/pending", get(pending_fragment))
        .route("/console/approvals/{id}", get(linked_approval).post(answer))
        .route("/console/agents", get(operate::agents_page))
        .route("/console/grants/{id}/revoke", post(operate::revoke))
        .route("/console/audit", get(operate::audit_page))
        .route("/console/plugins", get(operate::plugins_page))
        .route("/console/plugins/install", post(operate::plugin_install))
        .route(
            "/console/plugins/{name}/remove",
            post(operate::plugin_remove),
        )
        .route(
            "/console/bridges/{name}/approve",
            post(operate::bridge_approve),
        )
        .route("/console/toolsmith", get(operate::toolsmith_page))
        .route("/console/toolsmith/{id}/{action}", post(operate::blueprint))
        .route("/console/assets/console.css", get(assets::style))
        .route("/console/assets/console.js", get(assets::script))
        .layer(middleware::from_fn_with_state(console.clone(), guard))
        .with_state(console)
}

/// Refuses a Host this server does not answer to (DNS rebinding), and
/// puts the security headers on every response.
async fn guard(State(console): State<Arc<Console>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(host_name);
    if !host.is_some_and(|h| {
        console
            .hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(&h))
    }) {
        return (
            StatusCode::FORBIDDEN,
            "this server does not answer to that host name",
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// `host[:port]` or `[v6]:port` without the port.
fn host_name(value: &str) -> String {
    let value = value.trim();
    let name = if let Some(rest) = value.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        value.rsplit_once(':').map_or(value, |(h, _)| h)
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl Console {
    /// The session id and sign-in the request's cookie names.
    pub(super) fn signed_in(&self, headers: &HeaderMap) -> Option<(String, SignIn)> {
        let id = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE)
            .map(|(_, value)| value.to_owned())?;
        let signin = self.signins.get(&id)?;
        Some((id, signin))
    }

    /// The Set-Cookie value for session `id` (`None`: the cookie cleared).
    fn cookie(&self, id: Option<&str>) -> String {
        let secure = if self.secure_cookie { "; Secure" } else { "" };
        match id {
            Some(id) => format!(
                "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
                self.signins.ttl().as_secs()
            ),
            None => {
                format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
            }
        }
    }
}

pub(super) fn page(status: StatusCode, html: String) -> Response {
    (status, Html(html)).into_response()
}

/// A state change refused: nothing was done.
pub(super) fn refused(why: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        pages::layout(
            "Refused",
            None,
            &format!(
                "<h1>Refused</h1><p class=\"notice error\">{}</p><p><a href=\"/console\">Back to the console</a></p>",
                super::html::esc(why)
            ),
        ),
    )
}

#[derive(Deserialize)]
struct AfterSignIn {
    #[serde(default)]
    next: String,
}

async fn signin_page(Query(next): Query<AfterSignIn>) -> Response {
    page(StatusCode::OK, pages::signin(None, local_page(&next.next)))
}

/// `next` when it names one of the console's own pages (a path of plain
/// segments under `/console`), so a link can send a person through the
/// sign-in to where it points and nowhere else.
fn local_page(next: &str) -> Option<&str> {
    let plain = next.strip_prefix("/console/").is_some_and(|rest| {
        rest.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b))
        })
    });
    plain.then_some(next)
}

/// Where a link an agent's client was given leads (URL elicitation): the
/// approvals page at that ask, after a sign-in when there is none.
async fn linked_approval(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some((_, signin)) = console.signed_in(&headers) else {
        // The path is percent-encoded already: only its `%` needs escaping
        // to pass through a query string.
        let here = crate::approve::console_link("", &id).replace('%', "%25");
        return Redirect::to(&format!("/console/login?next={here}")).into_response();
    };
    let pending = console.server.book().pending();
    let notice = if pending.iter().any(|asked| asked.id == id) {
        (
            format!("An agent's client sent you here to answer approval {id}, marked below."),
            false,
        )
    } else {
        (
            format!("Approval {id} is no longer waiting: it was answered, used or has expired."),
            true,
        )
    };
    page(
        StatusCode::OK,
        pages::approvals(&signin, &pending, Some((&notice.0, notice.1)), Some(&id)),
    )
}

#[derive(Deserialize)]
struct SignInForm {
    #[serde(default)]
    actor: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

async fn signin(State(console): State<Arc<Console>>, Form(form): Form<SignInForm>) -> Response {
    let next = local_page(&form.next);
    let (actor, ttl) = match who_signs_in(&console, &form).await {
        Ok(found) => found,
        Err((status, problem)) => return page(status, pages::signin(Some(&problem), next)),
    };
    match console.signins.open_for(&actor, ttl) {
        Ok((id, _)) => {
            tracing::info!(actor, "signed in to the console");
            let mut response = Redirect::to(next.unwrap_or("/console")).into_response();
            if let Ok(value) = HeaderValue::from_str(&console.cookie(Some(&id))) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Err(e) => page(
            StatusCode::INTERNAL_SERVER_ERROR,
            pages::signin(Some(&e), next),
        ),
    }
}

/// A name the audit trail can record for a person: 1 to 64 characters,
/// none of them control characters.
fn recordable(actor: &str) -> bool {
    !actor.is_empty() && actor.chars().count() <= 64 && !actor.chars().any(char::is_control)
}

/// Who signs in and for how long: with an admin token, the name given,
/// for the configured time; with an operator's access token, its
/// subject, until the token expires. Anything else is refused.
async fn who_signs_in(
    console: &Console,
    form: &SignInForm,
) -> Result<(String, std::time::Duration), (StatusCode, String)> {
    if console.tokens.matches(form.token.as_bytes()).is_some() {
        let actor = form.actor.trim();
        if !recordable(actor) {
            return Err((
                StatusCode::BAD_REQUEST,
                "give your name (1 to 64 characters): every answer you give records it".to_owned(),
            ));
        }
        return Ok((actor.to_owned(), console.signins.ttl()));
    }
    let refused = || {
        tracing::warn!(actor = %form.actor.trim(), "a console sign-in with a wrong admin token");
        (
            StatusCode::UNAUTHORIZED,
            "that is not an admin token of this server".to_owned(),
        )
    };
    let Some(verifier) = &console.oauth else {
        return Err(refused());
    };
    let token = form.token.trim();
    if token.split('.').count() != 3 {
        return Err(refused());
    }
    match verifier.operator(token).await {
        Ok(operator) if !recordable(&operator.actor) => Err((
            StatusCode::UNAUTHORIZED,
            "that access token's subject cannot be recorded as a name (1 to 64 printable \
             characters)"
                .to_owned(),
        )),
        Ok(operator) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(u64::MAX);
            let left = operator.expires_at_s.saturating_sub(now);
            Ok((operator.actor, std::time::Duration::from_secs(left)))
        }
        Err(refusal) => {
            let why = match refusal {
                crate::Refusal::InvalidToken { description }
                | crate::Refusal::InsufficientScope { description, .. }
                | crate::Refusal::NoAgent { description }
                | crate::Refusal::NotAnOperator { description } => description,
            };
            tracing::warn!(reason = %why, "a console sign-in with an access token was refused");
            Err((
                StatusCode::UNAUTHORIZED,
                format!("that access token does not sign in here: {why}"),
            ))
        }
    }
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn signout(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Err(refusal) = console.actor(&headers, &form.csrf) {
        return *refusal;
    }
    let Some((id, _)) = console.signed_in(&headers) else {
        return refused("you are not signed in");
    };
    console.signins.close(&id);
    let mut response = Redirect::to("/console/login").into_response();
    if let Ok(value) = HeaderValue::from_str(&console.cookie(None)) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

async fn approvals_page(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some((_, signin)) = console.signed_in(&headers) else {
        return Redirect::to("/console/login").into_response();
    };
    let notice = query.get("answered").map(|id| format!("Answered {id}."));
    let pending = console.server.book().pending();
    page(
        StatusCode::OK,
        pages::approvals(
            &signin,
            &pending,
            notice.as_deref().map(|n| (n, false)),
            None,
        ),
    )
}

async fn pending_fragment(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    let Some((_, signin)) = console.signed_in(&headers) else {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    };
    let pending = console.server.book().pending();
    page(StatusCode::OK, pages::pending_list(&signin, &pending))
}

#[derive(Deserialize)]
struct AnswerForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    rule: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    confirm: Option<String>,
}

async fn answer(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<AnswerForm>,
) -> Response {
    let signin = match console.actor(&headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let book = console.server.book();
    let again = |status: StatusCode, problem: String| {
        page(
            status,
            pages::approvals(&signin, &book.pending(), Some((&problem, true)), None),
        )
    };
    let Some(asked) = book.get(&id) else {
        return again(
            StatusCode::NOT_FOUND,
            format!("{id} is not waiting any more (answered elsewhere, or expired)"),
        );
    };
    let text = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    let body = AnswerBody {
        decision: form.decision.clone(),
        always: (form.scope == "always").then(|| form.rule.trim().to_owned()),
        reason: text(&form.reason),
        actor: Some(signin.actor.clone()),
        confirm: form.confirm.is_some(),
    };
    let decided = match body.answer(&asked) {
        Ok(answer) => answer,
        Err(Refusal::Invalid(e)) => return again(StatusCode::BAD_REQUEST, e),
        Err(Refusal::Guardrail(e)) => return again(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match book.answer_by(&id, decided, &format!("console:{}", signin.actor)) {
        Ok(_) => {
            tracing::info!(actor = %signin.actor, approval = %id, decision = %form.decision, "answered in the console");
            Redirect::to(&format!("/console?answered={}", urlencode(&id))).into_response()
        }
        Err(e) => again(StatusCode::CONFLICT, e.to_string()),
    }
}

/// `text` safe in a URL query value.
pub(super) fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("Warden.Example.:443"), "warden.example");
        assert_eq!(host_name("localhost"), "localhost");
    }

    #[test]
    fn ids_are_encoded_for_a_query() {
        assert_eq!(urlencode("ap-1"), "ap-1");
        assert_eq!(urlencode("a&b=c"), "a%26b%3Dc");
    }
}
