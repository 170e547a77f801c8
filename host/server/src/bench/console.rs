//! The operator console's figures, measured on the `warden serve --http`
//! the MCP benchmark just drove (so its audit trail holds every call of
//! that run): sign in with the admin token, then fetch the pending
//! approvals page and the audit page (its newest 200 records, filtered
//! from the whole trail) over one keep-alive connection. A round trip on
//! loopback is the server's render time plus a few tens of microseconds.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use super::failed;
use crate::ServerError;

/// The admin token the benchmark's config names.
pub(super) const ADMIN_TOKEN: &str = "bench-admin-token-0123456789abcdef";

/// How many times each page is fetched.
const FETCHES: usize = 100;

fn fail(e: impl std::fmt::Display) -> ServerError {
    failed(e.to_string())
}

struct Client {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    authority: String,
}

impl Client {
    async fn connect(authority: &str) -> Result<Client, ServerError> {
        Ok(Client {
            sender: super::mcp::connect(authority).await?,
            authority: authority.to_owned(),
        })
    }

    /// One request; the status, the Set-Cookie value if any, and the body.
    async fn send(
        &mut self,
        method: http::Method,
        path: &str,
        cookie: Option<&str>,
        form: Option<String>,
    ) -> Result<(http::StatusCode, Option<String>, Bytes), ServerError> {
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::HOST, &self.authority);
        if let Some(c) = cookie {
            request = request.header(http::header::COOKIE, c);
        }
        if form.is_some() {
            request = request.header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        }
        let request = request
            .body(Full::new(Bytes::from(form.unwrap_or_default())))
            .map_err(fail)?;
        self.sender.ready().await.map_err(fail)?;
        let response = self.sender.send_request(request).await.map_err(fail)?;
        let status = response.status();
        let set = response
            .headers()
            .get(http::header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned);
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(fail)?
            .to_bytes();
        Ok((status, set, body))
    }
}

fn ms(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let i = ((samples.len().saturating_sub(1)) as f64 * p).round() as usize;
    samples.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Signs in and times each page.
pub(super) async fn figures(authority: &str) -> Result<Value, ServerError> {
    let mut client = Client::connect(authority).await?;
    let (status, cookie, _) = client
        .send(
            http::Method::POST,
            "/console/login",
            None,
            Some(format!("actor=bench&token={ADMIN_TOKEN}")),
        )
        .await?;
    let cookie = match (status, cookie) {
        (http::StatusCode::SEE_OTHER, Some(c)) => c,
        (status, _) => return Err(failed(format!("signing in to the console: HTTP {status}"))),
    };
    let mut pages = serde_json::Map::new();
    for (name, path) in [
        ("approvals_page", "/console"),
        ("audit_page", "/console/audit"),
    ] {
        let mut samples = Vec::with_capacity(FETCHES);
        for _ in 0..FETCHES {
            let t = Instant::now();
            let (status, _, body) = client
                .send(http::Method::GET, path, Some(&cookie), None)
                .await?;
            samples.push(t.elapsed());
            if status != http::StatusCode::OK || body.is_empty() {
                return Err(failed(format!("GET {path}: HTTP {status}")));
            }
        }
        pages.insert(
            name.into(),
            json!({"p50_ms": ms(&mut samples, 0.5), "p99_ms": ms(&mut samples, 0.99)}),
        );
    }
    Ok(Value::Object(pages))
}
