//! The CLI's side of the admin API: one request per connection, over the
//! Unix socket in the state directory or over HTTP with an admin token,
//! spoken by hyper's HTTP/1.1 client.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use warden_api::Guardrail;

use crate::admin::AnswerBody;
use crate::{McpError, plugins};

/// Admin responses larger than this are refused.
const MAX_BODY: usize = 16 << 20;

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

    /// Answers approval `id`.
    pub async fn answer(&self, id: &str, body: &AnswerBody) -> Result<Value, McpError> {
        self.request("POST", &format!("/approvals/{id}"), Some(self.json(body)?))
            .await
    }

    /// The server's plugins.
    pub async fn plugins(&self) -> Result<Value, McpError> {
        self.request("GET", "/plugins", None).await
    }

    /// Installs a component file or directory (a path on the server's
    /// machine) into the running server.
    pub async fn install(&self, path: &Path) -> Result<Value, McpError> {
        let body = self.json(&plugins::InstallBody {
            path: path.to_path_buf(),
        })?;
        self.request("POST", "/plugins", Some(body)).await
    }

    /// Removes plugin `name` from the running server, on the word of
    /// `guardrail` (actor, confirmation, reason).
    pub async fn remove(&self, name: &str, guardrail: &Guardrail) -> Result<Value, McpError> {
        let body = self.json(guardrail)?;
        self.request("DELETE", &format!("/plugins/{name}"), Some(body))
            .await
    }

    /// The status of the bridged servers (or of `name`).
    pub async fn bridges(&self, name: Option<&str>) -> Result<Value, McpError> {
        match name {
            Some(name) => self.request("GET", &format!("/bridges/{name}"), None).await,
            None => self.request("GET", "/bridges", None).await,
        }
    }

    /// Approves (`approve`) or revokes the definitions of `body.tools` of
    /// the bridge `name`.
    pub async fn bridge_pins(
        &self,
        name: &str,
        approve: bool,
        body: &crate::PinBody,
    ) -> Result<Value, McpError> {
        let body = self.json(body)?;
        let verb = if approve { "approve" } else { "revoke" };
        self.request("POST", &format!("/bridges/{name}/{verb}"), Some(body))
            .await
    }

    /// Restarts the bridge `name`.
    pub async fn bridge_restart(&self, name: &str) -> Result<Value, McpError> {
        self.request(
            "POST",
            &format!("/bridges/{name}/restart"),
            Some(b"{}".to_vec()),
        )
        .await
    }

    /// An agent's progressive trust.
    pub async fn trust(&self, agent: &str) -> Result<Value, McpError> {
        self.request("GET", &format!("/trust/{agent}"), None).await
    }

    /// A person's rating of an agent's work (0..=1).
    pub async fn trust_feedback(
        &self,
        agent: &str,
        score: f64,
        category: Option<&str>,
    ) -> Result<Value, McpError> {
        let body = self.json(&json!({ "score": score, "category": category }))?;
        self.request("POST", &format!("/trust/{agent}/feedback"), Some(body))
            .await
    }

    /// A person approves the promotion waiting for one.
    pub async fn trust_approve(
        &self,
        agent: &str,
        guardrail: &Guardrail,
    ) -> Result<Value, McpError> {
        let body = self.json(guardrail)?;
        self.request("POST", &format!("/trust/{agent}/approve"), Some(body))
            .await
    }

    fn json(&self, value: &impl serde::Serialize) -> Result<Vec<u8>, McpError> {
        serde_json::to_vec(value).map_err(|e| self.error(e.to_string()))
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Value, McpError> {
        let (host, uri) = match self {
            AdminClient::Socket(_) => ("warden".to_owned(), path.to_owned()),
            AdminClient::Http { base, .. } => {
                let authority = base
                    .strip_prefix("http://")
                    .ok_or_else(|| self.error("only http:// URLs are supported"))?
                    .trim_end_matches('/');
                (authority.to_owned(), format!("/admin{path}"))
            }
        };
        let mut request = http::Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::HOST, &host)
            .header(http::header::CONTENT_TYPE, "application/json");
        if let AdminClient::Http { token, .. } = self {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| self.error(format!("cannot build the request: {e}")))?;
        let (status, body) = match self {
            AdminClient::Socket(p) => {
                let stream = tokio::net::UnixStream::connect(p).await.map_err(|e| {
                    self.error(format!(
                        "cannot connect ({e}); is `warden serve` running with this state directory?"
                    ))
                })?;
                exchange(stream, request).await
            }
            AdminClient::Http { .. } => {
                let stream = tokio::net::TcpStream::connect(&host)
                    .await
                    .map_err(|e| self.error(format!("cannot connect: {e}")))?;
                exchange(stream, request).await
            }
        }
        .map_err(|e| self.error(format!("the exchange failed: {e}")))?;
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if status == http::StatusCode::OK {
            Ok(value)
        } else if let Some(e) = value.get("error").and_then(Value::as_str) {
            Err(self.error(e.to_owned()))
        } else {
            Err(self.error(format!("HTTP status {status}")))
        }
    }
}

/// Sends one request on a fresh connection and reads its response.
async fn exchange<S>(
    stream: S,
    request: http::Request<Full<Bytes>>,
) -> Result<(http::StatusCode, Bytes), Box<dyn std::error::Error + Send + Sync>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await?
        .to_bytes();
    drop(sender);
    let _ = driver.await;
    Ok((status, body))
}
