//! `warden serve --http` on a free loopback port, for the tests that
//! drive it over HTTP; killed when dropped.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `warden serve --http 127.0.0.1:PORT`, once it says it serves.
pub fn serve(config: &Path, state: &Path, port: u16) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["serve", "--http", &format!("127.0.0.1:{port}"), "--config"])
        .arg(config)
        .arg("--state-dir")
        .arg(state)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("warden serve stopped before serving:\n{seen}");
        };
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("serving MCP at") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Served(child)
}
