//! The admin API: list pending approvals, answer one; list, install and
//! remove plugins (routes in `plugins.rs`); show an agent's progressive
//! trust, rate its work, approve its promotion (`trust.rs`). Served on a
//! Unix socket in the state directory (mode 0600: the file permission is
//! the authentication, so `warden approvals` on the same machine needs no
//! token) and, for holders of an admin token, under `/admin` on the HTTP
//! listener. [`AdminClient`](crate::AdminClient) is the CLI's side.
//!
//! Attack it stops: other local users answering approvals (the socket is
//! owner-only), and a stale socket from a killed server blocking a new
//! one or a running server being hijacked (a socket that still answers is
//! never replaced).

use std::path::Path;

use axum::extract::{Path as UrlPath, State};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_api::{
    AnswerError, Answerer, ApprovalAnswer, ApprovalRequest, Attribution, Guardrail, GuardrailError,
};

use crate::{McpError, Server, bridges_admin, plugins, toolsmith_admin, trust};

/// A person's answer, as the admin API takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AnswerBody {
    /// `approve` or `deny`.
    pub decision: String,
    /// With `approve`: also add this allow rule for the agent. A rule
    /// other than the ask's suggested (exact) rule needs the guardrail:
    /// `actor`, `confirm: true` and `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<String>,
    /// Why: shown to the agent on a denial; audited with a broader rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who answers (audited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// An explicit confirmation, needed with a broader rule.
    #[serde(default)]
    pub confirm: bool,
}

impl AnswerBody {
    fn guardrail(&self) -> Guardrail {
        Guardrail {
            actor: self.actor.clone(),
            confirm: self.confirm,
            reason: self.reason.clone(),
        }
    }

    /// The answer to `asked`; a rule broader than the asked call needs
    /// the guardrail.
    pub(crate) fn answer(&self, asked: &ApprovalRequest) -> Result<ApprovalAnswer, Refusal> {
        let who = || Attribution {
            actor: self
                .actor
                .as_deref()
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .unwrap_or("operator")
                .to_owned(),
            confirm: self.confirm,
            reason: self.reason.clone(),
        };
        match (self.decision.as_str(), &self.always) {
            ("approve", None) => Ok(ApprovalAnswer::AllowOnce),
            ("approve", Some(rule)) if !rule.trim().is_empty() => {
                let rule = rule.trim().to_owned();
                let by = if rule == asked.suggested_rule {
                    who()
                } else {
                    self.guardrail()
                        .check(&format!(
                            "approving {} with the broader rule `{rule}`",
                            asked.id
                        ))
                        .map_err(Refusal::Guardrail)?
                };
                Ok(ApprovalAnswer::AlwaysAllow {
                    rule,
                    by: Answerer::Operator(by),
                })
            }
            ("approve", Some(_)) => Err(Refusal::Invalid("`always` needs a rule".to_owned())),
            ("deny", None) => Ok(ApprovalAnswer::Deny {
                reason: match &self.reason {
                    Some(r) => format!("denied by a person: {r}"),
                    None => "denied by a person".to_owned(),
                },
            }),
            ("deny", Some(_)) => Err(Refusal::Invalid(
                "`always` only goes with `approve`".to_owned(),
            )),
            (other, _) => Err(Refusal::Invalid(format!(
                "decision `{other}` is not one of `approve`, `deny`"
            ))),
        }
    }
}

/// Why the admin API did not act.
pub(crate) enum Refusal {
    Invalid(String),
    Guardrail(GuardrailError),
}

impl Refusal {
    pub(crate) fn reply(self) -> Reply {
        match self {
            Refusal::Invalid(e) => (StatusCode::BAD_REQUEST, Json(json!({ "error": e }))),
            Refusal::Guardrail(e) => (
                StatusCode::BAD_REQUEST,
                Json(json!({
                    "error": e.to_string(),
                    "code": GuardrailError::CODE,
                    "violations": e.violations,
                })),
            ),
        }
    }
}

pub(crate) type Reply = (StatusCode, Json<Value>);

async fn list(State(server): State<Server>) -> Json<Value> {
    Json(json!({ "pending": server.book().pending() }))
}

async fn answer(
    State(server): State<Server>,
    UrlPath(id): UrlPath<String>,
    Json(body): Json<AnswerBody>,
) -> Reply {
    let not_pending = |e: String| (StatusCode::NOT_FOUND, Json(json!({ "error": e })));
    let Some(asked) = server.book().get(&id) else {
        return not_pending(AnswerError::NotPending(id).to_string());
    };
    let answer = match body.answer(&asked) {
        Ok(a) => a,
        Err(refusal) => return refusal.reply(),
    };
    match server.book().answer(&id, answer) {
        Ok(request) => (StatusCode::OK, Json(json!({ "answered": request }))),
        Err(e) => not_pending(e.to_string()),
    }
}

/// The admin routes of a server: its approvals book, its plugins and
/// progressive trust.
pub fn admin_router(server: Server) -> Router {
    Router::new()
        .route("/approvals", get(list))
        .route("/approvals/{id}", post(answer))
        .route("/plugins", get(plugins::list).post(plugins::install))
        .route("/plugins/{name}", delete(plugins::remove))
        .route("/bridges", get(bridges_admin::status))
        .route("/bridges/{name}", get(bridges_admin::one))
        .route("/bridges/{name}/approve", post(bridges_admin::approve))
        .route("/bridges/{name}/revoke", post(bridges_admin::revoke))
        .route("/bridges/{name}/restart", post(bridges_admin::restart))
        .route("/toolsmith/blueprints", get(toolsmith_admin::list))
        .route("/toolsmith/blueprints/{id}", get(toolsmith_admin::show))
        .route(
            "/toolsmith/blueprints/{id}/approve",
            post(toolsmith_admin::approve),
        )
        .route(
            "/toolsmith/blueprints/{id}/reject",
            post(toolsmith_admin::reject),
        )
        .route(
            "/toolsmith/tools/{name}/retire",
            post(toolsmith_admin::retire),
        )
        .route("/toolsmith/verify", get(toolsmith_admin::verify))
        .route("/trust/{agent}", get(trust::show))
        .route("/trust/{agent}/feedback", post(trust::feedback))
        .route("/trust/{agent}/approve", post(trust::approve))
        .with_state(server)
}

/// Serves the admin API on a Unix socket at `path` until `shutdown`.
/// Refuses when a server already answers there; replaces a stale socket.
pub async fn serve_admin_socket(
    path: &Path,
    server: Server,
    shutdown: CancellationToken,
) -> Result<(), McpError> {
    AdminSocket::bind(path).await?.serve(server, shutdown).await
}

/// The admin API's socket, bound (connections queue from here on) and not
/// yet answered.
#[derive(Debug)]
pub struct AdminSocket {
    listener: tokio::net::UnixListener,
    path: std::path::PathBuf,
}

impl AdminSocket {
    /// Binds `path` (owner-only), refusing when another server answers
    /// there.
    pub async fn bind(path: &Path) -> Result<AdminSocket, McpError> {
        bind_socket(path).await.map(|listener| AdminSocket {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// Answers the admin API until `shutdown`, then removes the socket.
    pub async fn serve(self, server: Server, shutdown: CancellationToken) -> Result<(), McpError> {
        let app = admin_router(server).layer(axum::middleware::from_fn(
            crate::unread_body::close_if_unread,
        ));
        axum::serve(self.listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await?;
        let _ = std::fs::remove_file(self.path);
        Ok(())
    }
}

async fn bind_socket(path: &Path) -> Result<tokio::net::UnixListener, McpError> {
    let at = path.display().to_string();
    if tokio::net::UnixStream::connect(path).await.is_ok() {
        return Err(McpError::Admin {
            at,
            message: "another warden server is running with this state directory".into(),
        });
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(McpError::Admin {
                at,
                message: format!("cannot remove the stale socket: {e}"),
            });
        }
    }
    // Bind inside a fresh owner-only directory, narrow the socket, then
    // rename it into place: it is never reachable by its path before it is
    // 0600, so no other account can connect in between.
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let staging = parent.join(format!(".admin-{:x}{nonce:x}", std::process::id()));
    let bound = (|| -> Result<tokio::net::UnixListener, String> {
        use std::os::unix::fs::DirBuilderExt;
        // `create` fails when the name exists: the directory is ours.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&staging)
            .map_err(|e| format!("cannot make a private directory to bind in: {e}"))?;
        let staged = staging.join("s");
        let listener =
            tokio::net::UnixListener::bind(&staged).map_err(|e| format!("cannot listen: {e}"))?;
        set_owner_only(&staged)
            .map_err(|e| format!("cannot restrict the socket to its owner: {e}"))?;
        std::fs::rename(&staged, path)
            .map_err(|e| format!("cannot move the socket into place: {e}"))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir(&staging);
    bound.map_err(|message| McpError::Admin { at, message })
}

fn set_owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> ApprovalRequest {
        ApprovalRequest {
            id: "ap-1".into(),
            agent: "a".into(),
            request_id: "1".into(),
            tool: "fs_write".into(),
            call: "fs_write(/w/x)".into(),
            reason: "side effect".into(),
            suggested_rule: "fs_write(//w/x)".into(),
            args_fingerprint: "f".into(),
            arguments: Value::Null,
            always_offered: true,
        }
    }

    fn body(d: &str, always: Option<&str>) -> AnswerBody {
        AnswerBody {
            decision: d.into(),
            always: always.map(Into::into),
            reason: None,
            actor: None,
            confirm: false,
        }
    }

    #[test]
    fn answers_are_checked() {
        let a = asked();
        assert!(matches!(
            body("approve", None).answer(&a),
            Ok(ApprovalAnswer::AllowOnce)
        ));
        assert!(body("approve", Some(" ")).answer(&a).is_err());
        assert!(body("deny", Some("x")).answer(&a).is_err());
        assert!(body("maybe", None).answer(&a).is_err());
    }

    #[test]
    fn a_broader_rule_needs_actor_confirm_and_reason() {
        let a = asked();
        // The exact rule needs no guardrail.
        assert!(matches!(
            body("approve", Some("fs_write(//w/x)")).answer(&a),
            Ok(ApprovalAnswer::AlwaysAllow {
                by: Answerer::Operator(_),
                ..
            })
        ));
        for broader in ["fs_write(/**)", "*", "fs_*"] {
            match body("approve", Some(broader)).answer(&a) {
                Err(Refusal::Guardrail(e)) => assert_eq!(e.violations.len(), 3),
                _ => panic!("`{broader}` without the guardrail must be refused"),
            }
            let mut full = body("approve", Some(broader));
            full.actor = Some("dana".into());
            full.confirm = true;
            full.reason = Some("the build writes everywhere".into());
            match full.answer(&a) {
                Ok(ApprovalAnswer::AlwaysAllow {
                    rule,
                    by: Answerer::Operator(who),
                }) => {
                    assert_eq!(rule, broader);
                    assert_eq!(who.actor, "dana");
                    assert!(who.confirm);
                    assert_eq!(who.reason.as_deref(), Some("the build writes everywhere"));
                }
                _ => panic!("`{broader}` with the guardrail is accepted"),
            }
        }
    }
}
