//! Repositories made with the host's git, a dumb-HTTP git server that
//! counts requests (or redirects them), and a resolver stub.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs the host's git in `dir` with a fixed identity; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Fixture",
            "-c",
            "user.email=fixture@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .expect("these tests need git on the host to make fixture repositories");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Everything under `dir` writable by the sandbox user (uid 1000), while
/// owned by this process's uid (root): git in the container needs
/// `safe.directory` to accept it.
pub fn share(dir: &Path) {
    let out = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success());
}

/// A repository at `dir` with one commit of `files`.
pub fn repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "First"]);
    share(dir);
}

/// A bare copy of `src` ready to be served over dumb HTTP.
pub fn bare(src: &Path, dest: &Path) {
    git(
        src.parent().unwrap(),
        &[
            "clone",
            "-q",
            "--bare",
            src.to_str().unwrap(),
            dest.to_str().unwrap(),
        ],
    );
    git(dest, &["update-server-info"]);
}

/// What a server does with each request.
#[derive(Clone)]
pub enum Serve {
    /// Files under this directory (the dumb HTTP protocol).
    Files(PathBuf),
    /// `302` to this base URL, path kept.
    Redirect(String),
    /// Accepts, reads the request, and never answers.
    Hang,
    /// git's smart HTTP protocol: `git http-backend` as a CGI program over
    /// the repositories under this directory (receive-pack enabled where
    /// the repository's config says so).
    Smart(PathBuf),
}

/// A loopback HTTP server that counts the requests it gets.
pub struct Server {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Server {
    pub fn start(ip: IpAddr, serve: Serve) -> Server {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let count = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let serve = serve.clone();
                std::thread::spawn(move || answer(stream, &serve));
            }
        });
        Server { addr, hits }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn answer(mut stream: std::net::TcpStream, serve: &Serve) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).map_or(true, |n| n == 0) || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let target = line.split(' ').nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    let reply = match serve {
        Serve::Hang => {
            std::thread::sleep(std::time::Duration::from_secs(120));
            return;
        }
        Serve::Smart(root) => {
            let len: usize = headers
                .get("content-length")
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; len];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            cgi(root, &line, &headers, body)
        }
        Serve::Redirect(base) => {
            format!("HTTP/1.0 302 Found\r\nLocation: {base}{target}\r\nContent-Length: 0\r\n\r\n")
                .into_bytes()
        }
        Serve::Files(root) => {
            let file = root.join(path.trim_start_matches('/'));
            let inside = !path.split('/').any(|c| c == "..");
            match std::fs::File::open(&file).and_then(|mut f| {
                let mut body = Vec::new();
                f.read_to_end(&mut body).map(|_| body)
            }) {
                Ok(body) if inside && file.is_file() => {
                    let mut r = format!(
                        "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend(body);
                    r
                }
                _ => b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
            }
        }
    };
    let _ = stream.write_all(&reply);
}

/// A server that speaks the first line of SSH and records the client's.
pub struct SshBanner {
    pub addr: SocketAddr,
    pub seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl SshBanner {
    pub fn start(ip: IpAddr) -> SshBanner {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let _ = stream.write_all(b"SSH-2.0-WardenFixture\r\n");
                let mut line = String::new();
                let _ = BufReader::new(&stream).read_line(&mut line);
                record.lock().unwrap().push(line.trim_end().to_owned());
            }
        });
        SshBanner { addr, seen }
    }
}

/// Runs `git http-backend` for one request; its CGI answer as HTTP/1.0.
fn cgi(root: &Path, line: &str, headers: &BTreeMap<String, String>, body: Vec<u8>) -> Vec<u8> {
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or("GET");
    let target = parts.next().unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut child = Command::new("git")
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "fixture")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env(
            "CONTENT_TYPE",
            headers.get("content-type").cloned().unwrap_or_default(),
        )
        .env("CONTENT_LENGTH", body.len().to_string())
        .env(
            "HTTP_CONTENT_ENCODING",
            headers.get("content-encoding").cloned().unwrap_or_default(),
        )
        .env(
            "GIT_PROTOCOL",
            headers.get("git-protocol").cloned().unwrap_or_default(),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let out = child.wait_with_output().unwrap();
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, 2))
        });
    let Some((end, sep)) = split else {
        return b"HTTP/1.0 500 Bad CGI\r\nContent-Length: 0\r\n\r\n".to_vec();
    };
    let head = String::from_utf8_lossy(&out.stdout[..end]).into_owned();
    let mut status = "200 OK".to_owned();
    let mut reply_headers = String::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_owned(),
            Some(_) => {
                reply_headers.push_str(h.trim_end());
                reply_headers.push_str("\r\n");
            }
            None => {}
        }
    }
    let mut reply = format!("HTTP/1.0 {status}\r\n{reply_headers}\r\n").into_bytes();
    reply.extend_from_slice(&out.stdout[end + sep..]);
    reply
}

/// A resolver that knows only the names it was given.
pub struct Stub(pub BTreeMap<String, Vec<IpAddr>>);

impl warden_vcs::Resolve for Stub {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        _port: u16,
    ) -> warden_api::BoxFuture<'a, Result<Vec<IpAddr>, std::io::Error>> {
        let answer = self.0.get(host).cloned().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("no such host {host}"))
        });
        Box::pin(std::future::ready(answer))
    }
}

/// A marker path no call may ever create.
pub fn never(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("MARKER-{name}"))
}
