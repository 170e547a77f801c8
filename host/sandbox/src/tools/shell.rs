//! `terminal_exec` and `code_run`.
//!
//! Attack: a command line the policy reads one way and the shell runs
//! another. The policy's analyser reads bash; Debian's `/bin/sh` is dash,
//! where `ls &>/dev/null python3 -c '...'` backgrounds `ls` and runs
//! `python3`, and `echo $'\' ; rm -rf / #'` runs `rm` (dash has no
//! `$'...'`). Agent text therefore runs under exactly the shell the
//! analyser models: `bash --noprofile --norc -c`, with no startup files
//! (the container's environment sets no `BASH_ENV` or `ENV`).
//!
//! Attack: a line the analyser misread as read-only (bash evaluates
//! `$(...)` inside an array subscript in `test -v 'a[$(touch x)]'`). A
//! call allowed only because it reads runs in the agent's reader, where
//! every granted directory is read-only and there is no network: what
//! the reading missed fails to write instead of writing.

use serde_json::{Value, json};
use warden_api::{BackendCall, Effects};

use super::{Failure, Outcome, Place, SandboxTools, arg, text};
use crate::images::ImageKind;
use crate::sandbox::RunOutput;

pub(super) async fn terminal(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let command = arg(call, "command")?;
    let mut argv = bash();
    match call.args.get("cwd").and_then(Value::as_str) {
        Some(cwd) => {
            if !cwd.starts_with('/') {
                return Err(Failure::args("`cwd` must be an absolute path"));
            }
            // `cd` in the command keeps cwd an argument, never shell text.
            argv.push("cd \"$1\" && shift && exec bash --noprofile --norc -c \"$1\"".into());
            argv.extend(["terminal".into(), cwd.into(), command.into()]);
        }
        None => argv.push(command.into()),
    }
    let out = run_text(tools, call, argv).await?;
    Ok(result(&out))
}

pub(super) async fn code(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let source = arg(call, "source")?;
    let argv = match arg(call, "language")? {
        "python3" => vec!["python3".to_owned(), "-c".to_owned(), source.to_owned()],
        "sh" => {
            let mut argv = bash();
            argv.push(source.to_owned());
            argv
        }
        other => {
            return Err(Failure::args(format!(
                "language `{other}` is not supported: python3 or sh"
            )));
        }
    };
    let out = run_text(tools, call, argv).await?;
    Ok(result(&out))
}

/// Runs agent text in the base image: in the reader when the call was
/// allowed only because it reads, else in the writer.
async fn run_text(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    argv: Vec<String>,
) -> Result<RunOutput, Failure> {
    let place = Place {
        kind: ImageKind::Base,
        grants: call.grants,
        own_container: false,
        scratch_mb: None,
        timeout: tools.timeout(call),
        read_only: call.paths.is_some_and(|g| g.effects() == Effects::ReadOnly),
    };
    tools.run_in(call, &place, argv, None, None).await
}

/// The shell agent text runs under: bash without startup files, which is
/// what the policy's analyser models; the text follows as the next argument.
pub const AGENT_SHELL: [&str; 4] = ["bash", "--noprofile", "--norc", "-c"];

fn bash() -> Vec<String> {
    AGENT_SHELL.into_iter().map(str::to_owned).collect()
}

fn result(out: &RunOutput) -> Value {
    let o = &out.output;
    // 128 + n: killed by signal n (9: the memory limit's OOM killer, or a kill).
    let signal = o
        .exit_code
        .filter(|c| *c > 128 && *c < 160)
        .map(|c| c - 128);
    json!({
        "exit_code": o.exit_code,
        "signal": signal,
        "stdout": text(&o.stdout),
        "stderr": text(&o.stderr),
        "stdout_bytes": o.stdout_total,
        "stderr_bytes": o.stderr_total,
        "truncated": o.truncated(),
        "duration_ms": u64::try_from(o.elapsed.as_millis()).unwrap_or(u64::MAX),
        "strategy": out.strategy.as_str(),
        "container": &out.container[..out.container.len().min(12)],
    })
}
