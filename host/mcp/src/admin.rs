//! The admin API: list pending approvals, answer one; list, install and
//! remove plugins (routes in `plugins.rs`). Served on a Unix
//! socket in the state directory (mode 0600: the file permission is the
//! authentication, so `warden approvals` on the same machine needs no
//! token) and, for holders of an admin token, under `/admin` on the HTTP
//! listener. [`AdminClient`] is the CLI's side.
//!
//! Attack it stops: other local users answering approvals (the socket is
//! owner-only), and a stale socket from a killed server blocking a new
//! one or a running server being hijacked (a socket that still answers is
//! never replaced).

use std::path::{Path, PathBuf};

use axum::extract::{Path as UrlPath, State};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use warden_api::ApprovalAnswer;

use crate::{McpError, Server, plugins};

/// A person's answer, as the admin API takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AnswerBody {
    /// `approve` or `deny`.
    pub decision: String,
    /// With `approve`: also add this allow rule for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AnswerBody {
    fn answer(&self) -> Result<ApprovalAnswer, String> {
        match (self.decision.as_str(), &self.always) {
            ("approve", None) => Ok(ApprovalAnswer::AllowOnce),
            ("approve", Some(rule)) if !rule.trim().is_empty() => Ok(ApprovalAnswer::AlwaysAllow {
                rule: rule.trim().to_owned(),
            }),
            ("approve", Some(_)) => Err("`always` needs a rule".to_owned()),
            ("deny", None) => Ok(ApprovalAnswer::Deny {
                reason: match &self.reason {
                    Some(r) => format!("denied by a person: {r}"),
                    None => "denied by a person".to_owned(),
                },
            }),
            ("deny", Some(_)) => Err("`always` only goes with `approve`".to_owned()),
            (other, _) => Err(format!(
                "decision `{other}` is not one of `approve`, `deny`"
            )),
        }
    }
}

type Reply = (StatusCode, Json<Value>);

async fn list(State(server): State<Server>) -> Json<Value> {
    Json(json!({ "pending": server.book().pending() }))
}

async fn answer(
    State(server): State<Server>,
    UrlPath(id): UrlPath<String>,
    Json(body): Json<AnswerBody>,
) -> Reply {
    let answer = match body.answer() {
        Ok(a) => a,
        Err(e) => return (StatusCode::BAD_REQUEST, Json(json!({ "error": e }))),
    };
    match server.book().answer(&id, None, answer) {
        Ok(request) => (StatusCode::OK, Json(json!({ "answered": request }))),
        Err(e) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": e.to_string() })),
        ),
    }
}

/// The admin routes of a server: its approvals book and its plugins.
pub fn admin_router(server: Server) -> Router {
    Router::new()
        .route("/approvals", get(list))
        .route("/approvals/{id}", post(answer))
        .route("/plugins", get(plugins::list).post(plugins::install))
        .route("/plugins/{name}", delete(plugins::remove))
        .with_state(server)
}

/// Serves the admin API on a Unix socket at `path` until `shutdown`.
/// Refuses when a server already answers there; replaces a stale socket.
pub async fn serve_admin_socket(
    path: &Path,
    server: Server,
    shutdown: CancellationToken,
) -> Result<(), McpError> {
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
    let listener = bound.map_err(|message| McpError::Admin {
        at: at.clone(),
        message,
    })?;
    let cleanup = path.to_path_buf();
    axum::serve(listener, admin_router(server))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await?;
    let _ = std::fs::remove_file(cleanup);
    Ok(())
}

fn set_owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// Where the admin API is.
#[derive(Debug, Clone)]
pub enum AdminClient {
    Socket(PathBuf),
    /// `http://host:port` and an admin token.
    Http {
        base: String,
        token: String,
    },
}

impl AdminClient {
    fn at(&self) -> String {
        match self {
            AdminClient::Socket(p) => p.display().to_string(),
            AdminClient::Http { base, .. } => format!("{base}/admin"),
        }
    }

    fn error(&self, message: impl Into<String>) -> McpError {
        McpError::Admin {
            at: self.at(),
            message: message.into(),
        }
    }

    /// Pending approvals, oldest first.
    pub async fn pending(&self) -> Result<Value, McpError> {
        self.request("GET", "/approvals", None).await
    }

    /// The server's plugins.
    pub async fn plugins(&self) -> Result<Value, McpError> {
        self.request("GET", "/plugins", None).await
    }

    /// Installs a component file or directory (a path on the server's
    /// machine) into the running server.
    pub async fn install(&self, path: &Path) -> Result<Value, McpError> {
        let body = serde_json::to_vec(&plugins::InstallBody {
            path: path.to_path_buf(),
        })
        .map_err(|e| self.error(e.to_string()))?;
        self.request("POST", "/plugins", Some(body)).await
    }

    /// Removes plugin `name` from the running server.
    pub async fn remove(&self, name: &str) -> Result<Value, McpError> {
        self.request("DELETE", &format!("/plugins/{name}"), None)
            .await
    }

    /// Answers approval `id`.
    pub async fn answer(&self, id: &str, body: &AnswerBody) -> Result<Value, McpError> {
        let body = serde_json::to_vec(body).map_err(|e| self.error(e.to_string()))?;
        self.request("POST", &format!("/approvals/{id}"), Some(body))
            .await
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Value, McpError> {
        let body = body.unwrap_or_default();
        let (host, path, auth) = match self {
            AdminClient::Socket(_) => ("warden".to_owned(), path.to_owned(), String::new()),
            AdminClient::Http { base, token } => {
                let authority = base
                    .strip_prefix("http://")
                    .ok_or_else(|| self.error("only http:// URLs are supported"))?
                    .trim_end_matches('/');
                (
                    authority.to_owned(),
                    format!("/admin{path}"),
                    format!("Authorization: Bearer {token}\r\n"),
                )
            }
        };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let raw = match self {
            AdminClient::Socket(p) => {
                let stream = tokio::net::UnixStream::connect(p).await.map_err(|e| {
                    self.error(format!(
                        "cannot connect ({e}); is `warden serve` running with this state directory?"
                    ))
                })?;
                exchange(stream, head.as_bytes(), &body).await
            }
            AdminClient::Http { .. } => {
                let stream = tokio::net::TcpStream::connect(&host)
                    .await
                    .map_err(|e| self.error(format!("cannot connect: {e}")))?;
                exchange(stream, head.as_bytes(), &body).await
            }
        }
        .map_err(|e| self.error(format!("the exchange failed: {e}")))?;
        let (status, body) = (raw.status, raw.body);
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if status == 200 {
            Ok(value)
        } else if let Some(e) = value.get("error").and_then(Value::as_str) {
            Err(self.error(e.to_owned()))
        } else {
            Err(self.error(format!("HTTP status {status}")))
        }
    }
}

/// Sends one request and reads its response.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    head: &[u8],
    body: &[u8],
) -> std::io::Result<crate::http1::Response> {
    stream.write_all(head).await?;
    stream.write_all(body).await?;
    stream.flush().await?;
    crate::http1::read_response(&mut tokio::io::BufReader::new(stream)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked() {
        let body = |d: &str, always: Option<&str>| AnswerBody {
            decision: d.into(),
            always: always.map(Into::into),
            reason: None,
        };
        assert_eq!(
            body("approve", None).answer(),
            Ok(ApprovalAnswer::AllowOnce)
        );
        assert!(body("approve", Some(" ")).answer().is_err());
        assert!(body("deny", Some("x")).answer().is_err());
        assert!(body("maybe", None).answer().is_err());
    }
}
