//! The author command: an operator's program that writes a blueprint
//! when a capability gap becomes recurring (`[toolsmith] author-command`).
//!
//! Attack: an author that is slow, loud or wrong holding up the host or
//! getting more than any other author. The program runs with a cleared
//! environment, in a process group of its own that is killed at its
//! deadline, with its output bounded; what it prints is only a proposal,
//! read and derived like any other (the host names the tool and sets its
//! grants), kept as `pending` for a person's `tool:create` approval, and
//! counted against its own daily limit.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use warden_store::StoredBlueprint;

use super::Toolsmith;
use crate::ServerError;

/// The `PATH` the author command gets (the host's own is not passed).
const AUTHOR_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The most of its stderr kept for the log when the command fails.
const STDERR_KEPT: usize = 4096;

/// Recurring gaps waiting for the author command, at most.
pub const AUTHOR_QUEUE: usize = 16;

/// The configured author command.
#[derive(Debug, Clone)]
pub struct AuthorCommand {
    argv: Vec<String>,
    deadline: Duration,
}

impl AuthorCommand {
    /// `[toolsmith]`'s author command, when one is configured.
    pub fn configured(config: &crate::gaps::ToolsmithConfig) -> Option<AuthorCommand> {
        (!config.author_command.is_empty()).then(|| AuthorCommand {
            argv: config.author_command.clone(),
            deadline: Duration::from_secs(config.author_deadline_secs),
        })
    }

    /// Who its blueprints are by: `command:` and the program's file name.
    pub fn author(&self) -> String {
        let program = self.argv.first().map(String::as_str).unwrap_or_default();
        let name = std::path::Path::new(program)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(program);
        format!("command:{name}")
    }

    /// Runs the command with `request` on its stdin; its stdout, at most
    /// `cap` bytes, once it exited successfully within its deadline.
    async fn run(&self, request: &[u8], cap: usize) -> Result<Vec<u8>, String> {
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| "the command is empty".to_owned())?;
        let mut child = Command::new(program)
            .args(args)
            .env_clear()
            .env("PATH", AUTHOR_PATH)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start `{program}`: {e}"))?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw);
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the command's pipes were not opened".to_owned());
        };
        let request = request.to_vec();
        let writing = async move {
            // A command that does not read its input is its own business.
            let _ = stdin.write_all(&request).await;
            drop(stdin);
        };
        let ran = async {
            let ((), out, err, status) = tokio::join!(
                writing,
                bounded(stdout, cap),
                bounded(stderr, STDERR_KEPT),
                child.wait()
            );
            (out, err, status)
        };
        let outcome = tokio::time::timeout(self.deadline, ran).await;
        // Whatever it left running in its group goes, in every case.
        if let Some(group) = group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let Ok((out, err, status)) = outcome else {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(format!(
                "it ran longer than its deadline ({} s, `[toolsmith] author-deadline-secs`) \
                 and was killed",
                self.deadline.as_secs()
            ));
        };
        let status = status.map_err(|e| format!("waiting for it: {e}"))?;
        let (err, _) = err.map_err(|e| format!("reading its stderr: {e}"))?;
        let said = String::from_utf8_lossy(&err).trim().to_owned();
        if !status.success() {
            return Err(format!("it failed ({status}): {said}"));
        }
        let (out, whole) = out.map_err(|e| format!("reading its stdout: {e}"))?;
        if !whole {
            return Err(format!(
                "it printed more than {cap} bytes, more than a blueprint within \
                 `[toolsmith]`'s size limits can be"
            ));
        }
        Ok(out)
    }
}

/// At most `cap` bytes of `stream`, and whether that was all of it (the
/// rest is read and dropped, so the writer never blocks).
async fn bounded(
    mut stream: impl AsyncRead + Unpin,
    cap: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut whole = true;
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, whole));
        }
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        whole &= n <= room;
    }
}

impl Toolsmith {
    /// What the author command reads on stdin for `signature`: the gap
    /// as `warden toolsmith gaps` shows it, the name the host will give
    /// the tool, its grants in words and the size limits.
    pub(super) fn author_request(&self, signature: &str) -> Result<serde_json::Value, ServerError> {
        let rule = self.config.gap_rule()?;
        let gap = self
            .store
            .gaps(self.clock.now_ms(), &rule)?
            .into_iter()
            .find(|g| g.signature == signature)
            .ok_or_else(|| ServerError::Toolsmith {
                id: 0,
                message: format!("the gap `{signature}` is no longer in the log"),
            })?;
        let (domain, action) = signature.split_once(':').unwrap_or((signature, ""));
        let name = warden_toolsmith::CapabilitySig::new(domain, action)
            .map(|s| s.tool_name())
            .map_err(|e| ServerError::Toolsmith {
                id: 0,
                message: format!("`{signature}` is no capability: {e}"),
            })?;
        Ok(json!({
            "gap": gap,
            "tool": {
                "name": name,
                "grants": self.config.sandbox.in_words(),
            },
            "limits": {
                "max-source-bytes": self.config.max_source_bytes,
                "max-component-bytes": self.config.max_component_bytes,
            },
        }))
    }

    /// Asks `command` for a blueprint for the recurring gap `signature`
    /// and keeps what it writes as `pending`.
    pub async fn author_with(
        &self,
        command: &AuthorCommand,
        signature: &str,
    ) -> Result<StoredBlueprint, ServerError> {
        let request = self.author_request(signature)?;
        // A prebuilt component travels in base64 inside the JSON.
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let cap = size(self.config.max_component_bytes)
            .max(size(self.config.max_source_bytes))
            .saturating_mul(2)
            .saturating_add(1 << 20);
        let out = command
            .run(request.to_string().as_bytes(), cap)
            .await
            .map_err(|message| ServerError::Toolsmith {
                id: 0,
                message: format!("the author command {}: {message}", command.author()),
            })?;
        let text = String::from_utf8(out).map_err(|_| ServerError::Toolsmith {
            id: 0,
            message: format!("the author command {} printed no UTF-8", command.author()),
        })?;
        self.propose(&text, &command.author())
    }
}

/// Asks `command` for a blueprint for each gap this host saw become
/// recurring, one at a time, until `shutdown`; a failure is logged and
/// the next gap taken.
pub async fn author_recurring(
    smith: Arc<Toolsmith>,
    command: AuthorCommand,
    mut recurring: mpsc::Receiver<String>,
    shutdown: CancellationToken,
) {
    loop {
        let signature = tokio::select! {
            () = shutdown.cancelled() => return,
            next = recurring.recv() => match next {
                Some(signature) => signature,
                None => return,
            },
        };
        let authored = tokio::select! {
            () = shutdown.cancelled() => return,
            authored = smith.author_with(&command, &signature) => authored,
        };
        match authored {
            Ok(kept) => tracing::info!(
                signature = %signature,
                id = kept.id,
                name = %kept.name,
                author = %kept.author,
                "a blueprint for a recurring gap waits for an operator's approval"
            ),
            Err(e) => tracing::warn!(
                signature = %signature,
                error = %e,
                "no blueprint for the recurring gap"
            ),
        }
    }
}
