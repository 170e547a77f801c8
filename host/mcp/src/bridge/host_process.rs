//! The host runtime: a bridged server as a plain process of the host,
//! allowed only when the operator says so with `insecure-host-process`.
//!
//! What this stops, as far as a host process can be held: the server
//! inheriting Warden's environment (tokens, proxies, `LD_PRELOAD`), its
//! children outliving it (`npx` and `uv` start grandchildren; the server is
//! made a process-group leader and the whole group is killed), and a
//! server that floods stderr blocking forever (stderr is drained into a
//! bounded log). It does not stop a hostile server from using the host's
//! file system and network: that is what the Docker runtime is for.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use warden_api::BoxFuture;

use super::connector::{Connection, Connector, Link, Process, StderrLog};

/// The `PATH` a host-runtime server gets (the host's own is not passed).
pub const HOST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How long a server gets to exit after its input closes, and again after
/// SIGTERM, before the group is killed.
const GRACE: Duration = Duration::from_secs(3);

/// Starts `argv` as a process of the host for each session.
#[derive(Debug)]
pub struct HostProcess {
    argv: Vec<String>,
    /// The whole environment: declared variables and secrets (`PATH` is
    /// [`HOST_PATH`] unless declared).
    env: Vec<(String, String)>,
    stderr: Arc<StderrLog>,
}

impl HostProcess {
    pub fn new(
        argv: Vec<String>,
        env: Vec<(String, String)>,
        stderr: Arc<StderrLog>,
    ) -> HostProcess {
        HostProcess { argv, env, stderr }
    }
}

impl Connector for HostProcess {
    fn connect<'a>(&'a self, _session: &'a str) -> BoxFuture<'a, Result<Connection, String>> {
        Box::pin(async move {
            let (program, args) = self
                .argv
                .split_first()
                .ok_or_else(|| "the command is empty".to_owned())?;
            let mut command = Command::new(program);
            command
                .args(args)
                .env_clear()
                .env("PATH", HOST_PATH)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .kill_on_drop(true);
            let mut child = command
                .spawn()
                .map_err(|e| format!("could not start `{program}`: {e}"))?;
            let pid = child.id().and_then(|id| i32::try_from(id).ok());
            let (Some(stdin), Some(stdout), Some(mut stderr)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                return Err("the server's pipes were not opened".to_owned());
            };
            let group = Group {
                pid: pid.and_then(Pid::from_raw),
                child: Some(child),
            };
            let log = self.stderr.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    log.push(&buf[..n]);
                }
            });
            Ok(Connection {
                link: Link::Stream {
                    read: Box::new(stdout),
                    write: Box::new(stdin),
                },
                process: Box::new(group),
            })
        })
    }

    fn runtime(&self) -> &'static str {
        "host"
    }
}

/// A server's process group.
struct Group {
    pid: Option<Pid>,
    child: Option<Child>,
}

impl Group {
    fn signal(&self, signal: Signal) {
        if let Some(pid) = self.pid {
            let _ = rustix::process::kill_process_group(pid, signal);
        }
    }
}

impl Process for Group {
    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(mut child) = self.child.take() else {
                return;
            };
            // Its input is already closed by the session's end.
            if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                self.signal(Signal::TERM);
                if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                    let _ = child.start_kill();
                }
            }
            // Whatever the server left running in its group goes too.
            self.signal(Signal::KILL);
            let _ = child.wait().await;
        })
    }

    fn describe(&self) -> String {
        self.pid.map_or_else(
            || "process".to_owned(),
            |p| format!("pid {}", p.as_raw_nonzero()),
        )
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
    }
}
