//! What each tool does when called.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Resource, ResourceContents};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::handler::Session;

/// A 1x1 PNG (one orange pixel), base64.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP438DwHwAGgAJ/EEwb4QAAAABJRU5ErkJggg==";

/// A WAV file (8 kHz, mono, 8-bit, four samples), base64.
pub const WAV: &str = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQQAAACAoIBg";

/// The blob of the `resource` tool's second block (bytes 00 01 02 03 fe ff),
/// base64.
pub const BLOB: &str = "AAECA/7/";

/// The size of one `stderr_flood` write.
const CHUNK: usize = 64 * 1024;

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

fn fail(s: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(s)])
}

fn with_structured(mut result: CallToolResult, value: Value) -> CallToolResult {
    result.structured_content = Some(value);
    result
}

fn int_arg(args: &JsonObject, name: &str) -> Result<i64, CallToolResult> {
    args.get(name)
        .and_then(Value::as_i64)
        .ok_or_else(|| fail(format!("argument {name:?} must be an integer")))
}

fn uint_arg(args: &JsonObject, name: &str) -> Result<u64, CallToolResult> {
    args.get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| fail(format!("argument {name:?} must be a non-negative integer")))
}

fn size_arg(args: &JsonObject, name: &str) -> Result<usize, CallToolResult> {
    let n = uint_arg(args, name)?;
    usize::try_from(n).map_err(|_| fail(format!("argument {name:?} is too large")))
}

fn str_arg<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, CallToolResult> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| fail(format!("argument {name:?} must be a string")))
}

/// Writes `bytes` bytes to stderr in blocking 64 KiB writes, as lines of
/// 1 KiB.
fn flood_stderr(bytes: usize) -> std::io::Result<()> {
    let mut chunk = vec![b'E'; CHUNK];
    for line_end in chunk.iter_mut().skip(1023).step_by(1024) {
        *line_end = b'\n';
    }
    let mut stderr = std::io::stderr().lock();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK);
        stderr.write_all(&chunk[..n])?;
        left -= n;
    }
    stderr.flush()
}

impl Session {
    /// Runs tool `name`. `Ok` with `isError` for a tool's own failure (bad
    /// arguments included); `Err` only for an unknown tool.
    pub async fn call(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        Ok(match self.run(name, args, context).await {
            Some(Ok(result) | Err(result)) => result,
            None => {
                return Err(McpError::invalid_params(
                    format!("unknown tool {name:?}"),
                    None,
                ));
            }
        })
    }

    async fn run(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResult, CallToolResult>> {
        let shared = &self.shared;
        let result = match name {
            "echo" => str_arg(args, "text").map(text),
            "image" => Ok(CallToolResult::success(vec![ContentBlock::image(
                PNG,
                "image/png",
            )])),
            "audio" => Ok(CallToolResult::success(vec![ContentBlock::audio(
                WAV,
                "audio/wav",
            )])),
            "resource" => Ok(CallToolResult::success(vec![
                ContentBlock::resource(ResourceContents::text(
                    "the fixture document",
                    "fixture://doc",
                )),
                ContentBlock::resource(
                    ResourceContents::blob(BLOB, "fixture://blob")
                        .with_mime_type("application/octet-stream"),
                ),
            ])),
            "link" => Ok(CallToolResult::success(vec![ContentBlock::resource_link(
                Resource::new("fixture://linked", "linked").with_mime_type("text/plain"),
            )])),
            "structured" => int_arg(args, "n").and_then(|n| {
                let doubled = n.checked_mul(2).ok_or_else(|| fail("n * 2 overflows"))?;
                Ok(CallToolResult::structured(
                    json!({"n": n, "doubled": doubled}),
                ))
            }),
            "structured_only" => Ok(with_structured(
                CallToolResult::success(Vec::new()),
                json!({"n": 21, "doubled": 42}),
            )),
            "structured_error" => Ok(with_structured(
                fail("the fixture failed on purpose"),
                json!({"reason": "bad"}),
            )),
            "null_structured" => Ok(with_structured(text("null"), Value::Null)),
            "bad_output" => Ok(with_structured(
                text(r#"{"n":"not a number"}"#),
                json!({"n": "not a number"}),
            )),
            "slow" => match uint_arg(args, "ms") {
                Ok(ms) => Ok(tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => text("done"),
                    () = context.ct.cancelled() => fail("cancelled"),
                }),
                Err(e) => Err(e),
            },
            "progress" => {
                // Three steps, each reported against the request's token.
                if let Some(token) = context.meta.get_progress_token() {
                    for step in 1..=3u32 {
                        let mut p = rmcp::model::ProgressNotificationParam::new(
                            token.clone(),
                            f64::from(step),
                        );
                        p.total = Some(3.0);
                        p.message = Some(format!("step {step}"));
                        let _ = context.peer.notify_progress(p).await;
                    }
                }
                Ok(text("done"))
            }
            "ask" => {
                // A form for the person behind the client (`elicitation/create`).
                let params = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "Which colour?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"colour": {"type": "string"}},
                        "required": ["colour"]
                    }
                }))
                .map_err(|e| fail(e.to_string()));
                match params {
                    Ok(params) => match context.peer.create_elicitation(params).await {
                        Ok(answer) => Ok(text(json!(answer).to_string())),
                        Err(e) => Err(fail(format!("the form failed: {e}"))),
                    },
                    Err(e) => Err(e),
                }
            }
            "crash" => std::process::exit(3),
            "mutate_list" => {
                let added = shared.add_extra();
                shared.notify_list_changed().await;
                Ok(text(format!("added {added}")))
            }
            "rename_desc" => match str_arg(args, "description") {
                Ok(description) => {
                    shared.set_echo_description(description.to_owned());
                    shared.notify_list_changed().await;
                    Ok(text("renamed"))
                }
                Err(e) => Err(e),
            },
            "notify_noop" => {
                shared.notify_list_changed().await;
                Ok(text("notified"))
            }
            "huge" => size_arg(args, "bytes").map(|n| text("x".repeat(n))),
            "env_keys" => {
                let mut keys: Vec<String> = std::env::vars_os()
                    .map(|(k, _)| k.to_string_lossy().into_owned())
                    .collect();
                keys.sort();
                Ok(text(json!(keys).to_string()))
            }
            "echo_secret" => str_arg(args, "name").map(|name| {
                let value = std::env::var(name).unwrap_or_default();
                let _ = writeln!(std::io::stderr(), "echo_secret {name}={value}");
                text(value)
            }),
            "counter" => {
                let count = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(with_structured(
                    text(count.to_string()),
                    json!({"count": count}),
                ))
            }
            "stderr_flood" => match size_arg(args, "bytes") {
                Ok(bytes) => match tokio::task::spawn_blocking(move || flood_stderr(bytes)).await {
                    Ok(Ok(())) => Ok(text("flooded")),
                    Ok(Err(e)) => Err(fail(format!("writing stderr: {e}"))),
                    Err(e) => Err(fail(format!("flood task: {e}"))),
                },
                Err(e) => Err(e),
            },
            "spawn_grandchild" => match Command::new("sleep")
                .arg("1000")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                // Dropping the handle neither waits for nor kills it.
                Ok(child) => Ok(text(child.id().to_string())),
                Err(e) => Err(fail(format!("spawning sleep: {e}"))),
            },
            "pid" => Ok(text(std::process::id().to_string())),
            other if is_trivial(other) => Ok(text(other)),
            _ => return None,
        };
        Some(result)
    }
}

/// Tools only some listings show (`extra_N`, `many_N`, `t<k>`): they answer
/// their own name.
fn is_trivial(name: &str) -> bool {
    let numbered = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    numbered("extra_") || numbered("many_") || numbered("t")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_null_structured_content_is_serialized() -> Result<(), serde_json::Error> {
        let wire = serde_json::to_value(with_structured(text("null"), Value::Null))?;
        assert_eq!(wire.get("structuredContent"), Some(&Value::Null));
        let absent = serde_json::to_value(text("plain"))?;
        assert_eq!(absent.get("structuredContent"), None);
        Ok(())
    }

    #[test]
    fn structured_only_keeps_an_empty_content_array() -> Result<(), serde_json::Error> {
        let result = with_structured(CallToolResult::success(Vec::new()), json!({"n": 1}));
        let wire = serde_json::to_value(result)?;
        assert_eq!(wire["content"], json!([]));
        assert_eq!(wire["structuredContent"], json!({"n": 1}));
        Ok(())
    }

    #[test]
    fn only_numbered_names_are_trivial() {
        assert!(is_trivial("extra_1") && is_trivial("many_299") && is_trivial("t0"));
        assert!(!is_trivial("extra_") && !is_trivial("text") && !is_trivial("many_x"));
    }
}
