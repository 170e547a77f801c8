//! Log shipping: what the host records about each sandboxed command.
//!
//! By default only metadata — sizes, line counts, timings, exit code,
//! truncation — goes to the log, so secrets a command prints never bypass
//! redaction. Raw output is logged only when the operator opts in, and
//! then capped per stream. Collection is bounded by the call's deadline
//! and the output cap ([`crate::SandboxConfig::max_output_bytes`]).

use warden_api::CallContext;

use crate::LogShipping;
use crate::docker::ExecOutput;

/// Counts and sizes of one command's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputMeta {
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub stdout_lines: usize,
    pub stderr_lines: usize,
    pub truncated: bool,
}

impl OutputMeta {
    pub fn of(out: &ExecOutput) -> OutputMeta {
        let lines = |b: &[u8]| bytecount(b) + usize::from(!b.is_empty() && !b.ends_with(b"\n"));
        OutputMeta {
            stdout_bytes: out.stdout_total,
            stderr_bytes: out.stderr_total,
            stdout_lines: lines(&out.stdout),
            stderr_lines: lines(&out.stderr),
            truncated: out.truncated(),
        }
    }
}

fn bytecount(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

/// Ships one command's record to the log (target `warden_sandbox::logs`).
pub fn ship(
    config: &LogShipping,
    context: &CallContext,
    tool: &str,
    container: &str,
    out: &ExecOutput,
) {
    if !config.enabled {
        return;
    }
    let meta = OutputMeta::of(out);
    let short = &container[..container.len().min(12)];
    tracing::info!(
        target: "warden_sandbox::logs",
        agent = %context.agent, session = %context.session, task = context.task.as_deref(),
        request_id = %context.request_id, tool, container = short,
        exit_code = out.exit_code, timed_out = out.timed_out,
        elapsed_ms = u64::try_from(out.elapsed.as_millis()).unwrap_or(u64::MAX),
        stdout_bytes = meta.stdout_bytes, stderr_bytes = meta.stderr_bytes,
        stdout_lines = meta.stdout_lines, stderr_lines = meta.stderr_lines,
        truncated = meta.truncated, "sandbox command"
    );
    if config.raw {
        let cap = usize::try_from(config.max_raw_bytes).unwrap_or(usize::MAX);
        let raw = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(cap)]).into_owned();
        tracing::info!(
            target: "warden_sandbox::logs",
            request_id = %context.request_id, tool, container = short,
            stdout = %raw(&out.stdout), stderr = %raw(&out.stderr), "sandbox command output (raw)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_counts_bytes_lines_and_truncation() {
        let out = ExecOutput {
            stdout: b"a\nb\nc".to_vec(),
            stderr: Vec::new(),
            stdout_total: 10,
            stderr_total: 0,
            ..ExecOutput::default()
        };
        let m = OutputMeta::of(&out);
        assert_eq!(m.stdout_lines, 3);
        assert_eq!(m.stderr_lines, 0);
        assert_eq!(m.stdout_bytes, 10);
        assert!(m.truncated);
    }
}
