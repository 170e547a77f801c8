//! The fixture MCP server the MCP-bridge tests drive (`specs/bridge.md`,
//! "Tests"): an ordinary rmcp server whose tools exercise what a bridge must
//! get right — every content kind, structured output (absent, explicit
//! null, schema-violating), slow calls and cancellation, crashes, list
//! changes, huge results, environment leaks, stderr floods and stray child
//! processes.
//!
//! ```text
//! warden-bridge-fixture [--http ADDR [--bearer TOKEN]] [--list-mode normal|endless|duplicate|many|huge-schema]
//! ```
//!
//! Without `--http` it serves MCP over stdio (newline-delimited JSON-RPC).
//! With `--http ADDR` it serves Streamable HTTP at `http://ADDR/mcp` and
//! prints `listening http://HOST:PORT/mcp` as the first line of stdout (port
//! 0 picks a free port); every HTTP request is logged (`http`, with its
//! method and whether it carried `Authorization: Bearer TOKEN`), and with
//! `--bearer` a request without that header is answered 401.
//! `FIXTURE_LOG=PATH` appends one JSON line per event (`start`, `http`,
//! `list`, `call`, `cancelled`) to `PATH`.

mod calls;
mod handler;
mod log;
mod tools;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use crate::handler::Shared;
use crate::log::EventLog;
use crate::tools::ListMode;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug)]
struct Args {
    http: Option<SocketAddr>,
    bearer: Option<String>,
    mode: ListMode,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        http: None,
        bearer: None,
        mode: ListMode::Normal,
    };
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--http" => {
                let addr = value()?;
                parsed.http = Some(addr.parse().map_err(|e| format!("--http {addr}: {e}"))?);
            }
            "--bearer" => parsed.bearer = Some(value()?),
            "--list-mode" => parsed.mode = value()?.parse()?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

async fn serve_stdio(shared: Arc<Shared>) -> Result<(), Error> {
    let running = shared.session().serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

async fn serve_http(
    shared: Arc<Shared>,
    addr: SocketAddr,
    bearer: Option<String>,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    hosts.push(bound.ip().to_string());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_legacy_session_mode(true);
    let sessions = shared.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(sessions.session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let expected = bearer.map(|t| format!("Bearer {t}"));
    let gate = move |request: Request, next: Next| {
        let shared = shared.clone();
        let expected = expected.clone();
        async move {
            let given = request
                .headers()
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            let authorized = expected.is_some() && given == expected.as_deref();
            shared.log.write(&json!({
                "event": "http",
                "method": request.method().as_str(),
                "authorized": authorized,
            }));
            if expected.is_some() && !authorized {
                return StatusCode::UNAUTHORIZED.into_response();
            }
            next.run(request).await
        }
    };
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn(gate));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://{bound}/mcp")?;
    stdout.flush()?;
    drop(stdout);
    // Without TCP_NODELAY small exchanges wait on delayed ACKs.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}

#[tokio::main]
async fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "warden-bridge-fixture: {e}\nusage: warden-bridge-fixture [--http ADDR [--bearer TOKEN]] \
                 [--list-mode normal|endless|duplicate|many|huge-schema]"
            );
            std::process::exit(2);
        }
    };
    let log = match EventLog::from_env() {
        Ok(log) => log,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warden-bridge-fixture: FIXTURE_LOG: {e}");
            std::process::exit(2);
        }
    };
    log.write(&json!({"event": "start", "pid": std::process::id()}));
    let shared = Shared::new(args.mode, log);
    let served = match args.http {
        Some(addr) => serve_http(shared, addr, args.bearer).await,
        None => serve_stdio(shared).await,
    };
    let code = match served {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warden-bridge-fixture: {e}");
            1
        }
    };
    // Exit now rather than let the runtime wait for a blocking task (a
    // `stderr_flood` stuck on a full pipe): the client has gone.
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse_args(list.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_the_command_line() -> Result<(), String> {
        let a = args(&[])?;
        assert_eq!((a.http, a.mode), (None, ListMode::Normal));
        let a = args(&["--http", "127.0.0.1:0", "--list-mode=many"])?;
        assert_eq!(a.http, Some(SocketAddr::from(([127, 0, 0, 1], 0))));
        assert_eq!(a.mode, ListMode::Many);
        assert!(args(&["--list-mode", "sideways"]).is_err());
        assert!(args(&["--http"]).is_err());
        assert!(args(&["--verbose"]).is_err());
        Ok(())
    }
}
