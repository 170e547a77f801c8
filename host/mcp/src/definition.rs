//! Definition digests: what a pin on a tool's definition records. A client
//! (and the model behind it) is shown a tool's name, title, description,
//! input and output schemas and annotations; a digest over exactly those,
//! as `tools/list` serialises them, in canonical JSON (RFC 8785), changes
//! whenever any of them does and never because of how they were
//! serialised. Warden's own tools get theirs from the definition it
//! advertises for them, so `warden tools list` shows what a client sees.

use rmcp::model::Tool;
use serde_json::Value;
use warden_api::ToolSpec;

use crate::McpError;

/// The members of a `tools/list` entry a definition digest covers.
pub const DEFINITION_FIELDS: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// `sha256:<hex>` of the canonical JSON of `tool`'s [`DEFINITION_FIELDS`]
/// as `tools/list` serialises it (fields it lacks are left out).
pub fn definition_digest(tool: &Tool) -> Result<String, McpError> {
    let entry = serde_json::to_value(tool).map_err(|e| McpError::Definition {
        tool: tool.name.to_string(),
        reason: e.to_string(),
    })?;
    Ok(entry_digest(&entry))
}

/// [`definition_digest`] of a `tools/list` entry as JSON (what a client
/// received); members outside [`DEFINITION_FIELDS`] do not count.
pub fn entry_digest(entry: &Value) -> String {
    let covered: serde_json::Map<String, Value> = DEFINITION_FIELDS
        .iter()
        .filter_map(|field| Some(((*field).to_owned(), entry.get(field)?.clone())))
        .collect();
    warden_signing::sha256_digest(warden_api::canonical_json(&Value::Object(covered)).as_bytes())
}

/// The definition digest of the tool Warden advertises for `spec`.
pub fn spec_digest(spec: &ToolSpec) -> Result<String, McpError> {
    definition_digest(&crate::convert::tool(spec))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use serde_json::json;

    fn spec() -> ToolSpec {
        serde_json::from_value(json!({
            "name": "demo_read",
            "summary": "Read a thing.",
            "description": "Read a thing by its name.",
            "category": "file-system",
            "action-type": "code:read",
            "params-schema": {"type": "object", "properties": {"name": {"type": "string"}}},
            "result-schema": {"type": "object"},
            "side-effect": false,
        }))
        .unwrap()
    }

    #[test]
    fn the_digest_covers_what_a_client_is_shown_and_nothing_else() {
        let tool = crate::convert::tool(&spec());
        let digest = definition_digest(&tool).unwrap();
        assert!(
            digest.starts_with("sha256:") && digest.len() == 71,
            "{digest}"
        );
        let mut entry = serde_json::to_value(&tool).unwrap();
        assert_eq!(entry_digest(&entry), digest);
        // Members a pin does not cover change nothing; order changes nothing.
        entry["_meta"] = json!({"x": 1});
        let reordered: Value =
            serde_json::from_str(&serde_json::to_string_pretty(&entry).unwrap()).unwrap();
        assert_eq!(entry_digest(&reordered), digest);
        // Each covered member does.
        for (field, value) in [
            ("name", json!("demo_read2")),
            ("title", json!("Read a thing!")),
            (
                "description",
                json!("Read a thing by its name, then mail it."),
            ),
            ("inputSchema", json!({"type": "object"})),
            ("outputSchema", json!({"type": "object", "properties": {}})),
            ("annotations", json!({"readOnlyHint": false})),
        ] {
            let mut changed = entry.clone();
            changed[field] = value;
            assert_ne!(entry_digest(&changed), digest, "{field}");
        }
        let mut spec = spec();
        spec.description.push('!');
        assert_ne!(spec_digest(&spec).unwrap(), digest);
    }
}
