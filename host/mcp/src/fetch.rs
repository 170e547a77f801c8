//! One small HTTP GET for the host's own configuration needs (an OAuth
//! issuer's key set), through the same client settings as HTTP bridges.
//!
//! Attacks it stops: a redirect or an environment proxy taking the request
//! (and what it fetches) elsewhere — neither is followed; plain HTTP unless
//! the caller allows it; a huge or endless answer — the body is capped.

use std::time::Duration;

use crate::bridge::http::tls;

/// How long one fetch may take, connect to last byte.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The body of `url` (a 2xx answer), at most `max` bytes.
pub async fn fetch(url: &str, allow_http: bool, max: usize) -> Result<Vec<u8>, String> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .referer(false)
        .https_only(!allow_http)
        .http1_only()
        .timeout(TIMEOUT)
        .tls_backend_preconfigured(tls()?.as_ref().clone())
        .build()
        .map_err(|e| format!("could not build the HTTP client: {e}"))?;
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url} failed: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {url} answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url} failed: {e}"))?
    {
        if body.len() + chunk.len() > max {
            return Err(format!("{url} answered more than {max} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
