//! An answer given before its request's body was read says that it
//! closes the connection.
//!
//! Refusals answer without reading the body, on purpose: a missing or
//! wrong token, a foreign Origin or Host, an unknown path, a body over
//! the cap. Reading an unauthenticated body to the end would be work
//! done for anyone who can reach the port. hyper cannot reuse such a
//! connection (the rest of the body may still be on its way) and closes
//! it after the answer, but the answer's head has gone out by then
//! without `Connection: close`. A client that pools connections (most
//! do) sends its next request into the closing socket and fails with
//! "server disconnected without sending a response", or worse, retries
//! a request that was not idempotent. So every answer to a request whose
//! body was not read to its end carries `Connection: close`; a client
//! then opens a new connection. Answers to requests read whole keep
//! their connection.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use http::HeaderValue;
use http::header::CONNECTION;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// Middleware: marks the answer `Connection: close` when the request's
/// body was not read to its end by the time the answer was ready.
pub(crate) async fn close_if_unread(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(Watched {
            body,
            read: Arc::clone(&read),
        })
    });
    let mut response = next.run(request).await;
    if !read.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that notes when it has been read to its end.
struct Watched {
    body: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None))
            || (matches!(polled, Poll::Ready(Some(Ok(_)))) && self.body.is_end_stream())
        {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::routing::post;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    fn app() -> Router {
        Router::new()
            .route(
                "/read",
                post(|body: Bytes| async move { body.len().to_string() }),
            )
            .route("/refuse", post(|| async { http::StatusCode::UNAUTHORIZED }))
            .layer(axum::middleware::from_fn(close_if_unread))
    }

    async fn answer(path: &str, body: &'static str) -> anyhow::Result<Response> {
        let request = Request::post(path).body(Body::from(body))?;
        Ok(app().oneshot(request).await?)
    }

    fn closes(response: &Response) -> bool {
        response.headers().get(CONNECTION) == Some(&HeaderValue::from_static("close"))
    }

    #[tokio::test]
    async fn a_body_read_whole_keeps_the_connection() -> anyhow::Result<()> {
        let response = answer("/read", "twelve bytes").await?;
        assert!(!closes(&response), "{:?}", response.headers());
        assert_eq!(response.into_body().collect().await?.to_bytes(), "12");
        Ok(())
    }

    #[tokio::test]
    async fn an_answer_before_the_body_was_read_closes_the_connection() -> anyhow::Result<()> {
        let response = answer("/refuse", "unread").await?;
        assert_eq!(response.status(), http::StatusCode::UNAUTHORIZED);
        assert!(closes(&response), "{:?}", response.headers());
        Ok(())
    }

    #[tokio::test]
    async fn a_request_without_a_body_keeps_the_connection() -> anyhow::Result<()> {
        let response = answer("/refuse", "").await?;
        assert!(!closes(&response), "{:?}", response.headers());
        Ok(())
    }
}
