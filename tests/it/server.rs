//! A real HTTP/1.1 test server on 127.0.0.1, one thread, bounded: it
//! serves until dropped. Routes:
//!
//! - `/hello`: 200, `hello from the test server`
//! - `/redirect?to=URL`: 302 to URL
//! - `/big?n=N`: 200 with N bytes of `b`
//! - `/headers`: 200 with the request's header lines as the body
//! - anything else, and anything that is not HTTP: `pong`, then close
//!
//! It counts the connections it accepted, so a test can prove a refused
//! request never reached it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

pub struct Server {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                h.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(conn));
            }
        });
        Server { addr, hits, stop }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so the thread ends.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut conn: TcpStream) {
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if !head.starts_with(b"GET ") && !head.starts_with(b"POST ") && !head.starts_with(b"HEAD ")
        {
            break;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    if !head.starts_with("GET ") && !head.starts_with("POST ") && !head.starts_with("HEAD ") {
        let _ = conn.write_all(b"pong");
        return;
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let param = |k: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .map(|v| v.replace("%3A", ":").replace("%2F", "/"))
    };
    let (status, extra, body) = match path {
        "/hello" => (
            "200 OK",
            String::new(),
            b"hello from the test server".to_vec(),
        ),
        "/redirect" => (
            "302 Found",
            format!("location: {}\r\n", param("to").unwrap_or_default()),
            Vec::new(),
        ),
        "/big" => {
            let n: usize = param("n").and_then(|n| n.parse().ok()).unwrap_or(0);
            ("200 OK", String::new(), vec![b'b'; n])
        }
        "/headers" => ("200 OK", String::new(), head.clone().into_bytes()),
        _ => ("404 Not Found", String::new(), b"pong".to_vec()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes());
    let _ = conn.write_all(&body);
}
