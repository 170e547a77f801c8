//! What a person is shown when asked: every argument of the call.
//!
//! Attack it stops: approving one thing and running another — a person
//! shown `code_run(python)` approves whatever code comes with it, and a
//! person shown `terminal_exec(make)` does not see the `cwd` it runs in.
//! The question carries all arguments; a value too long to read is cut
//! and named by its sha256, so what was approved can still be matched
//! against the audit log.

use serde_json::Value;

/// Characters of a string argument shown before it is cut.
pub const SHOWN_CHARS: usize = 2000;

/// The arguments as a person sees them: every field, long strings cut to
/// [`SHOWN_CHARS`] characters plus their length and sha256.
pub fn shown_arguments(args: &Value) -> Value {
    match args {
        Value::String(s) if s.chars().count() > SHOWN_CHARS => {
            let head: String = s.chars().take(SHOWN_CHARS).collect();
            Value::String(format!(
                "{head}… [cut: {} bytes in all, {}]",
                s.len(),
                warden_signing::sha256_digest(s.as_bytes())
            ))
        }
        Value::Array(items) => Value::Array(items.iter().map(shown_arguments).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), shown_arguments(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_argument_is_shown_and_long_ones_are_cut_with_their_digest() {
        let code = "x".repeat(SHOWN_CHARS + 10);
        let shown = shown_arguments(&json!({
            "language": "sh",
            "code": code,
            "cwd": "/workspace/sub",
            "args": ["a", "b"],
        }));
        assert_eq!(shown["language"], "sh");
        assert_eq!(shown["cwd"], "/workspace/sub");
        assert_eq!(shown["args"], json!(["a", "b"]));
        let cut = shown["code"].as_str().unwrap();
        assert!(cut.starts_with(&"x".repeat(SHOWN_CHARS)));
        assert!(cut.contains(&warden_signing::sha256_digest(code.as_bytes())));
        assert!(cut.contains(&format!("{} bytes", code.len())));
    }
}
