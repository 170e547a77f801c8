//! Warden's HTTP tool. Requests go out through `wasi:http`, where the host
//! checks each one — and each redirect hop, which is a new request —
//! against the call's network grant and refuses non-public destinations.
//! The plugin asks for every host (`insecure:allow-all`); what a call may
//! reach is what the operator grants.

mod client;

#[warden_sdk::plugin(name = "http", network = ["insecure:allow-all"])]
mod http {
    use std::collections::BTreeMap;

    use warden_sdk::prelude::*;

    use crate::client::{self, Request};

    /// Arguments of `http_fetch`.
    #[derive(Debug, Deserialize)]
    pub struct FetchArgs {
        /// The absolute http:// or https:// URL.
        pub url: String,
        /// GET (default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
        pub method: Option<String>,
        /// Request headers.
        pub headers: Option<BTreeMap<String, String>>,
        /// Request body (text).
        pub body: Option<String>,
        /// Most body bytes to return (default 1 MiB); longer bodies are cut
        /// and reported as truncated.
        pub max_bytes: Option<u64>,
        /// Time budget of each request, in milliseconds (the host's limit
        /// still applies).
        pub timeout_ms: Option<u64>,
        /// Follow redirects (default true).
        pub follow_redirects: Option<bool>,
        /// Most redirects to follow (default 5; the host caps it too).
        pub max_redirects: Option<u32>,
    }

    #[derive(Debug, Serialize)]
    pub struct FetchResult {
        /// The final URL, after redirects.
        pub url: String,
        pub status: u16,
        /// Response headers; repeated headers are joined with `, `.
        pub headers: BTreeMap<String, String>,
        pub content_type: Option<String>,
        /// The body as text (invalid UTF-8 replaced).
        pub body: String,
        /// Bytes of body returned.
        pub body_bytes: u64,
        /// True when the body was longer than `max_bytes` and cut there.
        pub truncated: bool,
        /// The URLs redirected through, in order.
        pub redirects: Vec<String>,
    }

    /// Fetch a URL over HTTP(S).
    ///
    /// Returns the status, headers, content type and body text. Only hosts
    /// the operator granted are reachable; loopback, private and metadata
    /// addresses are refused unless a grant names them. A refusal says
    /// which grant would allow the request.
    #[tool(
        name = "http_fetch",
        category = "web",
        action = "external_data:request",
        side_effect = true,
        specifier = "{url}",
        example(
            description = "Fetch a JSON API",
            args = r#"{"url": "https://api.example.com/v1/items", "headers": {"accept": "application/json"}}"#
        )
    )]
    fn fetch(ctx: &Context, args: FetchArgs) -> Result<FetchResult, ToolError> {
        warden_api::net::check_url_text("the URL", &args.url)
            .map_err(|e| ToolError::invalid_argument(e.to_string()).with_code("invalid_url"))?;
        let mut url = url::Url::parse(&args.url).map_err(|e| {
            ToolError::invalid_argument(format!("`{}` is not a URL: {e}", args.url))
                .with_code("invalid_url")
        })?;
        check_url(&url)?;
        let mut method = args.method.clone().unwrap_or_else(|| "GET".into());
        let mut headers: Vec<(String, String)> = args
            .headers
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut body = args.body.as_deref().map(str::as_bytes);
        let max_bytes = args.max_bytes.unwrap_or(1 << 20);
        let max_redirects = args.max_redirects.unwrap_or(5);
        let mut redirects = Vec::new();
        loop {
            let response = client::send(
                ctx,
                &Request {
                    method: &method,
                    url: &url,
                    headers: &headers,
                    body,
                    timeout_ms: args.timeout_ms,
                },
                max_bytes,
            )?;
            let location = response
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("location"))
                .map(|(_, v)| v.clone());
            let follow = args.follow_redirects.unwrap_or(true)
                && (300..400).contains(&response.status)
                && location.is_some();
            if let (true, Some(location)) = (follow, location) {
                if redirects.len() as u32 >= max_redirects {
                    return Err(ToolError::failed(format!(
                        "{url} redirected more than {max_redirects} times; raise `max_redirects` or fetch the last URL yourself"
                    ))
                    .with_code("too_many_redirects"));
                }
                let next = url.join(&location).map_err(|e| {
                    ToolError::failed(format!(
                        "{url} redirected to an invalid URL `{location}`: {e}"
                    ))
                })?;
                check_url(&next)?;
                if next.origin() != url.origin() {
                    // Credentials were meant for the first origin only.
                    headers.retain(|(k, _)| {
                        !k.eq_ignore_ascii_case("authorization")
                            && !k.eq_ignore_ascii_case("cookie")
                    });
                }
                if response.status == 303
                    || (matches!(response.status, 301 | 302) && method.eq_ignore_ascii_case("POST"))
                {
                    method = "GET".into();
                    body = None;
                }
                redirects.push(next.to_string());
                url = next;
                continue;
            }
            return Ok(result(url, response, redirects));
        }
    }

    fn check_url(url: &url::Url) -> Result<(), ToolError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::invalid_argument(format!(
                "`{url}`: only http and https URLs can be fetched"
            ))
            .with_code("invalid_url"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(ToolError::invalid_argument(format!(
                "`{url}`: credentials in the URL are refused; send them in a header"
            ))
            .with_code("invalid_url"));
        }
        Ok(())
    }

    fn result(url: url::Url, r: client::Response, redirects: Vec<String>) -> FetchResult {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in r.headers {
            headers
                .entry(k.to_ascii_lowercase())
                .and_modify(|e| {
                    e.push_str(", ");
                    e.push_str(&v);
                })
                .or_insert(v);
        }
        FetchResult {
            url: url.to_string(),
            status: r.status,
            content_type: headers.get("content-type").cloned(),
            headers,
            body_bytes: r.body.len() as u64,
            body: String::from_utf8_lossy(&r.body).into_owned(),
            truncated: r.truncated,
            redirects,
        }
    }
}
