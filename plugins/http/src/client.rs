//! One HTTP exchange over `wasi:http/outgoing-handler`. The host checks
//! the request against the call's network grant; a refusal comes back as
//! an error code, and the host's reason from `Context::denials`.

use warden_sdk::{Context, ToolError};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::StreamError;

/// A request as it goes on the wire.
pub struct Request<'a> {
    pub method: &'a str,
    pub url: &'a url::Url,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
    pub timeout_ms: Option<u64>,
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// True when the body was longer than the cap and cut there.
    pub truncated: bool,
}

const CHUNK: u64 = 64 * 1024;

pub fn send(ctx: &Context, req: &Request<'_>, max_bytes: u64) -> Result<Response, ToolError> {
    let fields = Fields::new();
    for (name, value) in req.headers {
        fields
            .append(name, value.as_bytes())
            .map_err(|e| ToolError::invalid_argument(format!("header `{name}`: {e:?}")))?;
    }
    let outgoing = OutgoingRequest::new(fields);
    let method = match req.method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_owned()),
    };
    let scheme = match req.url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => {
            return Err(ToolError::invalid_argument(format!(
                "scheme `{other}` is not supported (use http or https)"
            )));
        }
    };
    let host = req
        .url
        .host_str()
        .ok_or_else(|| ToolError::invalid_argument("the URL has no host"))?;
    let authority = match req.url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let path = match req.url.query() {
        Some(q) => format!("{}?{q}", req.url.path()),
        None => req.url.path().to_owned(),
    };
    let invalid = |what: &str| ToolError::invalid_argument(format!("invalid {what}"));
    outgoing
        .set_method(&method)
        .map_err(|()| invalid("method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| invalid("scheme"))?;
    outgoing
        .set_authority(Some(&authority))
        .map_err(|()| invalid("host"))?;
    outgoing
        .set_path_with_query(Some(&path))
        .map_err(|()| invalid("path"))?;
    let options = RequestOptions::new();
    if let Some(ms) = req.timeout_ms {
        let ns = Some(ms.saturating_mul(1_000_000));
        // The host's own limit applies whatever these say.
        let _ = options.set_connect_timeout(ns);
        let _ = options.set_first_byte_timeout(ns);
        let _ = options.set_between_bytes_timeout(ns);
    }
    let body = outgoing
        .body()
        .map_err(|()| ToolError::failed("the request body could not be opened"))?;
    let pending =
        outgoing_handler::handle(outgoing, Some(options)).map_err(|e| refused(ctx, req.url, &e))?;
    write_body(&body, req.body)?;
    OutgoingBody::finish(body, None).map_err(|e| refused(ctx, req.url, &e))?;

    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(refused(ctx, req.url, &e)),
        Some(Err(())) | None => return Err(ToolError::failed("the response was lost")),
    };
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let incoming = response
        .consume()
        .map_err(|()| ToolError::failed("the response body could not be read"))?;
    let (body, truncated) = read_body(ctx, req.url, &incoming, max_bytes)?;
    Ok(Response {
        status,
        headers,
        body,
        truncated,
    })
}

fn write_body(body: &OutgoingBody, data: Option<&[u8]>) -> Result<(), ToolError> {
    let Some(data) = data else {
        return Ok(());
    };
    let stream = body
        .write()
        .map_err(|()| ToolError::failed("the request body could not be written"))?;
    for chunk in data.chunks(4096) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|e| ToolError::failed(format!("sending the request body: {e:?}")))?;
    }
    Ok(())
}

fn read_body(
    ctx: &Context,
    url: &url::Url,
    body: &IncomingBody,
    max_bytes: u64,
) -> Result<(Vec<u8>, bool), ToolError> {
    let stream = body
        .stream()
        .map_err(|()| ToolError::failed("the response body could not be read"))?;
    let mut out = Vec::new();
    loop {
        let room = (max_bytes + 1).saturating_sub(out.len() as u64);
        if room == 0 {
            break;
        }
        match stream.blocking_read(room.min(CHUNK)) {
            Ok(bytes) => out.extend_from_slice(&bytes),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(match wasip2::http::types::http_error_code(&e) {
                    Some(code) => refused(ctx, url, &code),
                    None => ToolError::failed(format!(
                        "reading the response of {url} failed: {}",
                        e.to_debug_string()
                    ))
                    .with_code("http_failed"),
                });
            }
        }
    }
    let truncated = out.len() as u64 > max_bytes;
    out.truncate(usize::try_from(max_bytes).unwrap_or(usize::MAX));
    Ok((out, truncated))
}

/// The error for a failed exchange: a host refusal carries the host's
/// reason; anything else names the error code.
fn refused(ctx: &Context, url: &url::Url, code: &ErrorCode) -> ToolError {
    match code {
        ErrorCode::HttpRequestDenied
        | ErrorCode::DestinationIpProhibited
        | ErrorCode::LoopDetected
        | ErrorCode::HttpRequestUriInvalid => {
            let why = ctx
                .denials()
                .pop()
                .unwrap_or_else(|| format!("the host refused the request to {url} ({code:?})"));
            ToolError::access_denied(why).with_code("network_denied")
        }
        ErrorCode::HttpResponseBodySize(_) => ToolError::failed(format!(
            "the response of {url} is over the host's size limit"
        ))
        .with_code("response_too_large"),
        _ => {
            ToolError::failed(format!("request to {url} failed: {code:?}")).with_code("http_failed")
        }
    }
}
