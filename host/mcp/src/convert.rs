//! Warden's tool specs and envelopes in MCP's shapes.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use warden_api::{Envelope, ToolSpec};

/// A JSON Schema as an MCP schema object (a non-object schema is wrapped
/// so clients always get an object).
fn schema_object(schema: &Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map.clone()),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The MCP tool for a spec: name, title, description, input schema, output
/// schema when the tool declares an object result, and the hints derived
/// from the spec (read-only when it has no side effect, destructive for
/// delete actions, open-world for web tools).
pub(crate) fn tool(spec: &ToolSpec) -> Tool {
    let mut annotations = ToolAnnotations::default();
    annotations.title = Some(spec.summary.clone());
    annotations.read_only_hint = Some(!spec.side_effect);
    annotations.destructive_hint = Some(spec.side_effect && is_destructive(spec));
    annotations.idempotent_hint = Some(!spec.side_effect);
    annotations.open_world_hint = Some(is_open_world(spec));
    let mut tool = Tool::new(
        spec.name.to_string(),
        spec.description.clone(),
        schema_object(&spec.params_schema),
    );
    tool.title = Some(spec.summary.clone());
    if spec.result_schema.get("type").and_then(Value::as_str) == Some("object") {
        tool.output_schema = Some(schema_object(&spec.result_schema));
    }
    tool.annotations = Some(annotations);
    tool
}

fn is_destructive(spec: &ToolSpec) -> bool {
    let action = spec.action_type.as_str();
    action.ends_with(":delete") || action.ends_with(":write") || action.ends_with(":mutate")
}

fn is_open_world(spec: &ToolSpec) -> bool {
    matches!(
        spec.category.as_str(),
        "web" | "browser" | "communication" | "external-data" | "deployment" | "mcp"
    )
}

/// An envelope as a tools/call result: data as text plus structured
/// content (when it is an object); an error as `isError` with the whole
/// envelope as JSON text and no structured content.
///
/// Structured content is the tool's output, and clients hold it to the
/// tool's `outputSchema` whatever `isError` says (the TypeScript SDK does,
/// and turns a mismatch into an exception that hides the refusal). Both
/// official SDKs and the specification accept an error result of text
/// content alone, so the denial reason, the approval id and the domain
/// code reach every client as text an agent reads.
pub(crate) fn result(envelope: Envelope) -> CallToolResult {
    match envelope {
        Envelope::Ok { data } => match data {
            // Taken, not copied: a result may be megabytes.
            Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            data => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(data.to_string())]);
                if data.is_object() {
                    result.structured_content = Some(data);
                }
                result
            }
        },
        Envelope::Error { ref message, .. } => {
            let text = serde_json::to_string(&envelope).unwrap_or_else(|_| message.clone());
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
        // The bridge checked the result's shape when it made the envelope;
        // one that no longer parses is reported, never half-sent.
        Envelope::Forwarded { result } => serde_json::from_value(result).unwrap_or_else(|e| {
            CallToolResult::error(vec![ContentBlock::text(format!(
                "the upstream result could not be passed on: {e}"
            ))])
        }),
    }
}
