//! The probe: one tool, `probe_run`, that performs the action it is asked
//! for and reports the outcome instead of failing, so grant tests read as a
//! table of grant set x action -> outcome. Actions that test limits (spin,
//! alloc, panic, emit) do exactly what they say and nothing clever; the
//! network actions use raw `wasi:sockets` and `wasi:http` so the host sees
//! exactly the address or URL parts the test gave.

mod net;

/// `symlink(target, link)` through `wasi:filesystem` (std's is unstable on
/// WASI): `link` is absolute, under a preopened directory.
fn symlink(target: &str, link: &std::path::Path) -> Result<(), String> {
    let link = link.to_string_lossy();
    for (dir, guest) in wasip2::filesystem::preopens::get_directories() {
        if let Some(rest) = link.strip_prefix(&format!("{}/", guest.trim_end_matches('/'))) {
            return dir
                .symlink_at(target, rest)
                .map_err(|e| format!("{link}: {e:?}"));
        }
    }
    Err(format!("{link}: not under a preopened directory"))
}

use std::sync::atomic::AtomicU64;

/// Counts calls seen by this instance: every call must see 1.
static CALLS: AtomicU64 = AtomicU64::new(0);

#[warden_sdk::plugin(
    name = "probe",
    filesystem = "read-write",
    network = ["insecure:allow-all"],
    env = ["PROBE_TOKEN", "PROBE_MODE"]
)]
mod probe {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use warden_sdk::prelude::*;

    use super::CALLS;

    /// What to do.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "action", rename_all = "kebab-case")]
    pub enum Action {
        /// Read a file.
        Read { path: String },
        /// Write a file.
        Write { path: String, content: String },
        /// List a directory.
        List { path: String },
        /// Make a hard link `to` naming the file at `from`.
        Link { from: String, to: String },
        /// Make a symbolic link `link` whose text is `target`.
        Symlink { target: String, link: String },
        /// Rename `from` to `to`.
        Rename { from: String, to: String },
        /// Delete a file or a symbolic link.
        Delete { path: String },
        /// Make a directory.
        Mkdir { path: String },
        /// Read an environment variable.
        Env { key: String },
        /// List the environment variable names the call can see.
        EnvKeys,
        /// Open a TCP connection (resolving `host` if it is a name), send
        /// `send` if given, and report the first bytes of the reply.
        Connect {
            host: String,
            port: u16,
            send: Option<String>,
        },
        /// A GET through `wasi:http` with the URL parts as given.
        HttpGet {
            scheme: String,
            authority: String,
            path: String,
        },
        /// Allocate and touch this many bytes.
        Alloc { bytes: u64 },
        /// Busy-loop for this many milliseconds.
        Spin { ms: u64 },
        /// Panic with a message.
        Panic { message: String },
        /// Return a string of this many bytes.
        Emit { bytes: u64 },
        /// Print this many bytes to stdout.
        Print { bytes: u64 },
        /// Log a line through the host interface.
        Log { message: String },
        /// Count calls seen by this instance and remember a value in a static.
        Count { remember: String },
        /// Busy-loop `steps` times for `ms` each, reporting progress after each.
        Steps { steps: u32, ms: u64 },
        /// Do nothing.
        Noop,
    }

    #[derive(Debug, Serialize)]
    pub struct Outcome {
        /// Whether the action succeeded.
        pub ok: bool,
        /// The result, or the error the guest saw.
        pub detail: String,
    }

    fn report<T: ToString, E: std::fmt::Display>(r: Result<T, E>) -> Outcome {
        match r {
            Ok(v) => Outcome {
                ok: true,
                detail: v.to_string(),
            },
            Err(e) => Outcome {
                ok: false,
                detail: e.to_string(),
            },
        }
    }

    /// The guest's error, followed by the host's last denial reason.
    fn with_denial(ctx: &Context, error: String) -> String {
        match ctx.denials().pop() {
            Some(why) => format!("{error} | host: {why}"),
            None => error,
        }
    }

    /// `f` on one resolved path; a failure carries the host's reason.
    fn one(
        ctx: &Context,
        path: &str,
        f: impl FnOnce(&std::path::Path) -> std::io::Result<()>,
    ) -> Result<&'static str, String> {
        ctx.resolve(path)
            .and_then(|p| f(&p).map_err(|e| ToolError::io(path, &e)))
            .map(|()| "done")
            .map_err(|e| with_denial(ctx, e.to_string()))
    }

    /// `f` on two resolved paths; a failure carries the host's reason.
    fn two(
        ctx: &Context,
        a: &str,
        b: &str,
        f: impl FnOnce(&std::path::Path, &std::path::Path) -> std::io::Result<()>,
    ) -> Result<&'static str, String> {
        let pa = ctx.resolve(a).map_err(|e| e.to_string())?;
        let pb = ctx.resolve(b).map_err(|e| e.to_string())?;
        f(&pa, &pb)
            .map(|()| "done")
            .map_err(|e| with_denial(ctx, format!("{a} -> {b}: {e}")))
    }

    static REMEMBERED: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

    /// Perform one action and report what happened.
    #[tool(
        name = "probe_run",
        category = "code-execution",
        action = "test:run",
        side_effect = true
    )]
    fn run(ctx: &Context, action: Action) -> Result<Outcome, ToolError> {
        Ok(match action {
            Action::Read { path } => report(
                ctx.resolve(&path)
                    .and_then(|p| std::fs::read_to_string(p).map_err(|e| ToolError::io(&path, &e))),
            ),
            Action::Write { path, content } => report(ctx.resolve(&path).and_then(|p| {
                std::fs::write(p, content)
                    .map(|()| "written")
                    .map_err(|e| ToolError::io(&path, &e))
            })),
            Action::List { path } => report(ctx.resolve(&path).and_then(|p| {
                let mut names = std::fs::read_dir(p)
                    .map_err(|e| ToolError::io(&path, &e))?
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ToolError::io(&path, &e))?;
                names.sort();
                Ok::<_, ToolError>(names.join(","))
            })),
            Action::Link { from, to } => {
                report(two(ctx, &from, &to, |a, b| std::fs::hard_link(a, b)))
            }
            Action::Symlink { target, link } => report(
                ctx.resolve(&link)
                    .and_then(|l| crate::symlink(&target, &l).map_err(ToolError::failed))
                    .map(|()| "done")
                    .map_err(|e| with_denial(ctx, e.to_string())),
            ),
            Action::Rename { from, to } => {
                report(two(ctx, &from, &to, |a, b| std::fs::rename(a, b)))
            }
            Action::Delete { path } => report(one(ctx, &path, |p| std::fs::remove_file(p))),
            Action::Mkdir { path } => report(one(ctx, &path, |p| std::fs::create_dir(p))),
            Action::Env { key } => report(std::env::var(&key)),
            Action::EnvKeys => {
                let mut keys: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
                keys.sort();
                Outcome {
                    ok: true,
                    detail: keys.join(","),
                }
            }
            Action::Connect { host, port, send } => report(
                crate::net::connect(&host, port, send.as_deref()).map_err(|e| with_denial(ctx, e)),
            ),
            Action::HttpGet {
                scheme,
                authority,
                path,
            } => report(
                crate::net::http_get(&scheme, &authority, &path).map_err(|e| with_denial(ctx, e)),
            ),
            Action::Alloc { bytes } => {
                let v = vec![1u8; bytes as usize];
                Outcome {
                    ok: true,
                    detail: v.iter().map(|b| *b as u64).sum::<u64>().to_string(),
                }
            }
            Action::Spin { ms } => {
                let start = Instant::now();
                let mut n = 0u64;
                while start.elapsed() < Duration::from_millis(ms) {
                    n = n.wrapping_add(1);
                }
                Outcome {
                    ok: true,
                    detail: n.to_string(),
                }
            }
            Action::Panic { message } => panic!("{message}"),
            Action::Emit { bytes } => Outcome {
                ok: true,
                detail: "x".repeat(bytes as usize),
            },
            Action::Print { bytes } => {
                let line = "y".repeat(bytes as usize);
                report(
                    std::io::stdout()
                        .write_all(line.as_bytes())
                        .map(|()| "printed"),
                )
            }
            Action::Log { message } => {
                ctx.log(LogLevel::Info, &message);
                ctx.progress(1.0, Some(1.0), Some("logged"));
                Outcome {
                    ok: true,
                    detail: "logged".into(),
                }
            }
            Action::Count { remember } => {
                let calls = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                let mut slot = REMEMBERED
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let before = std::mem::replace(&mut *slot, remember);
                Outcome {
                    ok: true,
                    detail: format!("calls={calls} before={before:?}"),
                }
            }
            Action::Steps { steps, ms } => {
                for step in 1..=steps {
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_millis(ms) {
                        std::hint::spin_loop();
                    }
                    ctx.progress(
                        f64::from(step),
                        Some(f64::from(steps)),
                        Some(&format!("step {step} of {steps}")),
                    );
                }
                Outcome {
                    ok: true,
                    detail: format!("{steps} steps"),
                }
            }
            Action::Noop => Outcome {
                ok: true,
                detail: String::new(),
            },
        })
    }
}
