//! Secret values never leave Warden: a server given a secret (a token in
//! its environment) may echo it in a result, an error or its stderr, and
//! each of those is scrubbed here before an agent, a log or a status
//! reply sees it. Each value becomes `[redacted:NAME]`.

use serde_json::Value;

/// Secrets shorter than this are not scrubbed (a one-character value
/// would redact every occurrence of that character); the configuration
/// refuses them.
pub const MIN_SECRET_LEN: usize = 4;

/// `text` with each secret value replaced by `[redacted:NAME]`.
pub fn scrub_text(text: &str, secrets: &[(String, String)]) -> String {
    let mut out = text.to_owned();
    for (name, value) in secrets {
        if value.len() >= MIN_SECRET_LEN && out.contains(value.as_str()) {
            out = out.replace(value.as_str(), &format!("[redacted:{name}]"));
        }
    }
    out
}

/// Scrubs every string in `value` (keys too); returns whether anything
/// was replaced. Base64 payloads (`data`, `blob`) are strings too: a
/// secret's plain bytes cannot appear in them as text, so they pass
/// unchanged unless they literally contain it.
pub fn scrub_value(value: &mut Value, secrets: &[(String, String)]) -> bool {
    if secrets.is_empty() {
        return false;
    }
    match value {
        Value::String(s) => {
            let clean = scrub_text(s, secrets);
            let changed = clean != *s;
            *s = clean;
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, item| scrub_value(item, secrets) | acc),
        Value::Object(map) => {
            let mut changed = false;
            let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for (key, mut item) in entries {
                changed |= scrub_value(&mut item, secrets);
                let clean = scrub_text(&key, secrets);
                changed |= clean != key;
                map.insert(clean, item);
            }
            changed
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_redacted_everywhere_in_a_result() {
        let secrets = vec![("GITHUB_TOKEN".to_owned(), "ghp_abc123".to_owned())];
        let mut result = json!({
            "content": [{"type": "text", "text": "token is ghp_abc123!"}],
            "structuredContent": {"ghp_abc123": ["x ghp_abc123"]},
        });
        assert!(scrub_value(&mut result, &secrets));
        let text = result.to_string();
        assert!(!text.contains("ghp_abc123"), "{text}");
        assert!(text.contains("[redacted:GITHUB_TOKEN]"), "{text}");
        let mut clean = json!({"a": "nothing here"});
        assert!(!scrub_value(&mut clean, &secrets));
    }
}
