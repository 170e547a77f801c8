//! A POST's event-stream answer held back for a moment, so a request
//! answered quickly goes out in one write.
//!
//! rmcp answers a POSTed request with an event stream whose first event
//! (the priming event: an id and a retry interval, no data) is ready at
//! once, and whose message comes when the request is done. Sent as they
//! come, the response head and the priming event make one write and the
//! message with the stream's end another: the client wakes twice for one
//! answer, and on a virtual machine whose idle cores sleep each wake-up
//! costs tens of microseconds. Here the response is handed to the
//! connection only once its stream has ended or [`HOLD`] has passed,
//! whichever is first, with every frame it produced meanwhile; the bytes
//! on the wire are the same, only the first write waits. A request that
//! runs longer than the hold (a slow tool, an elicitation waiting on a
//! person) sees its head and priming event [`HOLD`] later than before,
//! and everything after them as it comes.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;

/// How long a POST's event stream may be held before its head goes out:
/// far above a quick call's time on the host, far below anything a
/// person or a client's timeout would notice.
pub(crate) const HOLD: Duration = Duration::from_millis(2);

/// Middleware: holds the event-stream answer to a POST (see the module
/// doc); any other response passes as it is.
pub(crate) async fn hold_answer(request: Request, next: Next) -> Response {
    let post = request.method() == http::Method::POST;
    let response = next.run(request).await;
    if !post || !is_event_stream(&response) {
        return response;
    }
    let (parts, mut body) = response.into_parts();
    let mut held = VecDeque::new();
    let mut ended = false;
    let hold = tokio::time::sleep(HOLD);
    tokio::pin!(hold);
    loop {
        tokio::select! {
            biased;
            frame = body.frame() => match frame {
                Some(frame) => held.push_back(frame),
                None => {
                    ended = true;
                    break;
                }
            },
            () = &mut hold => break,
        }
    }
    let rest = (!ended).then_some(body);
    Response::from_parts(parts, Body::new(Held { held, rest }))
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The frames taken during the hold, then the rest of the stream.
struct Held {
    held: VecDeque<Result<Frame<Bytes>, axum::Error>>,
    rest: Option<Body>,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Some(frame) = self.held.pop_front() {
            return Poll::Ready(Some(frame));
        }
        match self.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_empty() && self.rest.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        // Unknown, as the stream's own: the answer stays chunked, as
        // rmcp sends it.
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::middleware;
    use tokio::sync::mpsc;
    use tower::ServiceExt as _;

    use super::*;

    /// An event stream fed by the test.
    struct Fed(mpsc::UnboundedReceiver<Bytes>);

    impl HttpBody for Fed {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
        }
    }

    /// A router answering POST and GET `/` with the stream `rx` feeds.
    fn app(rx: mpsc::UnboundedReceiver<Bytes>) -> Router {
        let rx = Arc::new(Mutex::new(Some(rx)));
        let answer = move || {
            let rx = rx.lock().ok().and_then(|mut rx| rx.take());
            async move {
                let Some(rx) = rx else {
                    return Response::new(Body::empty());
                };
                Response::builder()
                    .header(http::header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::new(Fed(rx)))
                    .unwrap_or_default()
            }
        };
        Router::new()
            .route("/", axum::routing::post(answer.clone()).get(answer))
            .layer(middleware::from_fn(hold_answer))
    }

    async fn send(app: Router, method: http::Method) -> anyhow::Result<Response> {
        let request = Request::builder()
            .method(method)
            .uri("/")
            .body(Body::empty())?;
        let answered = tokio::time::timeout(Duration::from_secs(10), app.oneshot(request)).await;
        Ok(answered??)
    }

    async fn next_data(body: &mut Body) -> anyhow::Result<Option<Bytes>> {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame()).await?;
        match frame {
            None => Ok(None),
            Some(frame) => Ok(frame?.into_data().ok()),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_ends_within_the_hold_is_answered_whole_and_unchanged()
    -> anyhow::Result<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(Bytes::from_static(b"id: 0\nretry: 3000\ndata:\n\n"))?;
        tx.send(Bytes::from_static(b"data: {\"id\":1}\n\n"))?;
        drop(tx);
        let started = tokio::time::Instant::now();
        let response = send(app(rx), http::Method::POST).await?;
        assert!(started.elapsed() < HOLD, "a finished answer was held");
        let bytes = response.into_body().collect().await?.to_bytes();
        assert_eq!(
            &bytes[..],
            b"id: 0\nretry: 3000\ndata:\n\ndata: {\"id\":1}\n\n"
        );
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_still_open_after_the_hold_is_answered_without_waiting_for_its_end()
    -> anyhow::Result<()> {
        // A slow call, or an elicitation waiting on a person: the head and
        // the priming event must reach the client before the stream ends.
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(Bytes::from_static(b"id: 0\nretry: 3000\ndata:\n\n"))?;
        let started = tokio::time::Instant::now();
        let response = send(app(rx), http::Method::POST).await?;
        assert!(started.elapsed() >= HOLD, "the answer was not held");
        let mut body = response.into_body();
        assert_eq!(
            next_data(&mut body).await?.as_deref(),
            Some(&b"id: 0\nretry: 3000\ndata:\n\n"[..])
        );
        tx.send(Bytes::from_static(b"data: {\"id\":1}\n\n"))?;
        assert_eq!(
            next_data(&mut body).await?.as_deref(),
            Some(&b"data: {\"id\":1}\n\n"[..])
        );
        drop(tx);
        assert_eq!(next_data(&mut body).await?, None);
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_get_stream_is_not_held() -> anyhow::Result<()> {
        // A standalone stream may stay silent for hours; nothing is sent
        // and the response must still come at once. (The clock is the
        // test's own, paused: it moves only when every task waits.)
        let (tx, rx) = mpsc::unbounded_channel();
        let started = tokio::time::Instant::now();
        let response = send(app(rx), http::Method::GET).await?;
        assert!(started.elapsed() < HOLD, "the GET stream was held");
        drop(tx);
        assert_eq!(next_data(&mut response.into_body()).await?, None);
        Ok(())
    }
}
