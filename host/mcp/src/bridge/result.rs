//! A bridged server's answer as Warden passes it on.
//!
//! Results are forwarded as the server gave them: every content block
//! (text, image, audio, embedded resource, resource link) unchanged,
//! `structuredContent` kept also when `content` is empty, when `isError`
//! is set, and when it is an explicit `null`. Only three things change a
//! result: the server's `_meta` is dropped, secret values are redacted,
//! and a result that breaks a rule Warden is bound by as the server its
//! client sees — larger than the cap, or not matching the tool's pinned
//! output schema — becomes an error that says so. Everything that went
//! wrong on the way (a timeout, a dropped connection, a JSON-RPC error)
//! is a Warden error envelope an agent can act on.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::CallToolResult;
use serde_json::Value;
use warden_api::{Envelope, ErrorType, HostCode};

use super::catalog::Listed;
use super::scrub::{scrub_text, scrub_value};
use super::settings::BridgeSettings;

/// The longest upstream error message passed on, in bytes.
const MAX_UPSTREAM_MESSAGE: usize = 4096;

/// How many schema violations an error lists.
const MAX_VIOLATIONS: usize = 5;

/// `result` as the envelope the caller gets, and whether a secret was
/// redacted from it.
pub(crate) fn forwarded(
    result: CallToolResult,
    tool: &Listed,
    settings: &BridgeSettings,
) -> (Envelope, bool) {
    let mut value = match serde_json::to_value(&result) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => {
            return (
                Envelope::host(
                    ErrorType::ToolError,
                    HostCode::InvalidResult,
                    format!("`{}`'s result could not be read", tool.advertised),
                ),
                false,
            );
        }
    };
    if let Some(map) = value.as_object_mut() {
        map.remove("_meta");
        map.remove("resultType");
    }
    let size = encoded_len(&value);
    if size > settings.max_result_bytes {
        return (
            Envelope::host(
                ErrorType::LimitExceeded,
                HostCode::OutputLimit,
                format!(
                    "`{}`'s result is too large ({size} bytes; the limit is {} bytes)",
                    tool.advertised, settings.max_result_bytes
                ),
            ),
            false,
        );
    }
    if result.is_error != Some(true)
        && let Some(schema) = &tool.output
    {
        let problem = match &result.structured_content {
            None => Some("it declares an output schema but returned no structured content".into()),
            Some(structured) => {
                let problems: Vec<String> = schema
                    .iter_errors(structured)
                    .take(MAX_VIOLATIONS)
                    .map(|e| {
                        let at = e.instance_path().to_string();
                        format!("{}: {e}", if at.is_empty() { "/" } else { &at })
                    })
                    .collect();
                (!problems.is_empty()).then(|| problems.join("; "))
            }
        };
        if let Some(problem) = problem {
            let message = format!(
                "`{}`'s result does not match its approved output schema: {problem}",
                tool.advertised
            );
            return (
                Envelope::host(
                    ErrorType::ToolError,
                    HostCode::InvalidResult,
                    scrub_text(&message, &settings.secrets),
                ),
                false,
            );
        }
    }
    let redacted = scrub_value(&mut value, &settings.secrets);
    (Envelope::Forwarded { result: value }, redacted)
}

/// An upstream JSON-RPC error as an error result.
pub(crate) fn upstream_error(error: &ErrorData, settings: &BridgeSettings) -> Envelope {
    let mut message = error.message.to_string();
    if message.len() > MAX_UPSTREAM_MESSAGE {
        let mut cut = MAX_UPSTREAM_MESSAGE;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    Envelope::error(
        ErrorType::ToolError,
        "upstream_error",
        scrub_text(
            &format!("upstream error {}: {message}", error.code.0),
            &settings.secrets,
        ),
    )
}

/// The call ran past its time; the server was told to cancel it.
pub(crate) fn timed_out(tool: &str, timeout: Duration) -> Envelope {
    Envelope::host(
        ErrorType::LimitExceeded,
        HostCode::DeadlineExceeded,
        format!(
            "`{tool}` timed out after {}; the server was asked to cancel it, and it was not retried",
            human(timeout)
        ),
    )
}

/// The server could not be reached, or went away mid-call.
pub(crate) fn unavailable(tool: &str, why: &str, settings: &BridgeSettings) -> Envelope {
    Envelope::host(
        ErrorType::HostError,
        HostCode::UpstreamUnavailable,
        scrub_text(&format!("`{tool}`: {why}"), &settings.secrets),
    )
}

fn human(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The length of `value` as JSON text, counted without building the text.
fn encoded_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
