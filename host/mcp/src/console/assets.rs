//! The console's style sheet and script, embedded in the binary and
//! served from `/console/assets/`: the Content-Security-Policy allows
//! these and nothing else.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const STYLE: &str = include_str!("assets/console.css");
const SCRIPT: &str = include_str!("assets/console.js");

pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

pub(crate) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}
