//! The cost of the host's HTTP hook: the same GET to a local server made
//! by a plain hyper client, through the hook's egress path (grant check,
//! address rules, pinned connect; by address and by name), and as a whole
//! `http_fetch` call. Prints p50/p99 per request.
//!
//! `cargo bench -p warden-runtime --bench http_hook`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark reports on stdout and fails loudly"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use warden_api::net::NetPattern;
use warden_api::{BackendCall, CallContext, CallLimits, Grants};
use warden_runtime::{Egress, HttpLimits, Runtime, RuntimeConfig};

const WARMUP: usize = 30;
const ROUNDS: usize = 400;
const BODY: &[u8] = b"hello from the bench server";

fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    BODY.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(BODY);
            });
        }
    });
    addr
}

fn request(authority: &str) -> http::Request<Empty<Bytes>> {
    http::Request::get(format!("http://{authority}/"))
        .header(http::header::HOST, authority)
        .body(Empty::new())
        .unwrap()
}

async fn native(addr: SocketAddr) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(wasmtime_wasi_http::io::TokioIo::new(tcp))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    let mut req = request(&addr.to_string());
    *req.uri_mut() = http::Uri::from_static("/");
    let body = sender.send_request(req).await.unwrap().into_body();
    assert_eq!(body.collect().await.unwrap().to_bytes().as_ref(), BODY);
    let _ = conn.await;
}

async fn hooked(egress: &Egress, authority: &str) {
    let (response, conn) = egress.send(request(authority), None).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body.as_ref(), BODY);
    let _ = conn.await;
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50).as_secs_f64() * 1e6, at(0.99).as_secs_f64() * 1e6)
}

async fn measure<F: AsyncFnMut()>(mut f: F) -> (f64, f64) {
    for _ in 0..WARMUP {
        f().await;
    }
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        f().await;
        samples.push(t.elapsed());
    }
    percentiles(samples)
}

fn pats(list: &[String]) -> Vec<NetPattern> {
    list.iter().map(|p| p.parse().unwrap()).collect()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = server();
    let port = addr.port();
    let all = pats(&["insecure:allow-all".into()]);
    let by_ip = Egress::new(
        &pats(&[format!("127.0.0.1:{port}")]),
        &all,
        HttpLimits::DEFAULT,
    );
    let by_name = Egress::new(
        &pats(&[format!("localhost:{port}"), "127.0.0.1".into()]),
        &all,
        HttpLimits::DEFAULT,
    );
    let ip_authority = addr.to_string();
    let name_authority = format!("localhost:{port}");

    rt.block_on(async {
        let (n50, n99) = measure(async || native(addr).await).await;
        let (i50, i99) = measure(async || hooked(&by_ip, &ip_authority).await).await;
        let (d50, d99) = measure(async || hooked(&by_name, &name_authority).await).await;

        let runtime = Runtime::new(RuntimeConfig::new(None)).unwrap();
        let plugin = runtime
            .load(Path::new(warden_test_artifacts::HTTP))
            .await
            .unwrap();
        let spec = plugin.manifest().tools[0].clone();
        let grants = Grants {
            net: pats(&[format!("127.0.0.1:{port}")]),
            ..Grants::default()
        };
        let args = serde_json::json!({"url": format!("http://{addr}/")});
        let ctx = CallContext {
            principal: None,
            agent: "bench".into(),
            session: "bench".into(),
            task: None,
            request_id: "1".into(),
        };
        let (c50, c99) = measure(async || {
            let e = plugin
                .invoke(BackendCall {
                    tool: &spec,
                    args: &args,
                    context: &ctx,
                    grants: &grants,
                    limits: CallLimits::DEFAULT,
                    events: None,
                    paths: None,
                    cwd: None,
                    remote: None,
                })
                .await;
            assert!(e.is_ok(), "{e:?}");
        })
        .await;

        println!("GET to a local server, fresh connection per request, {ROUNDS} rounds (us):");
        println!("  native hyper client            p50 {n50:8.1}  p99 {n99:8.1}");
        println!(
            "  host hook, address grant       p50 {i50:8.1}  p99 {i99:8.1}  (+{:.1} at p50)",
            i50 - n50
        );
        println!(
            "  host hook, name (resolved)     p50 {d50:8.1}  p99 {d99:8.1}  (+{:.1} at p50)",
            d50 - n50
        );
        println!("  http_fetch call (wasm + hook)  p50 {c50:8.1}  p99 {c99:8.1}");
    });
}
