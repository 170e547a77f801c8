//! The `toolsmith_propose` tool: beside the agent's own tools when the
//! host's toolsmith is enabled. Its action type is `tool:create`; a
//! proposal only waits for an operator.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

pub(crate) fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "blueprint": {
                "type": "object",
                "description": "capability (`domain:action`), title, description, input_schema, \
                    output_schema (JSON Schemas of objects), body ({\"rust\": {\"lib_rs\": ...}} or \
                    {\"component\": {\"sha256\": ..., \"base64\": ...}}), cases (at least 3, at \
                    least one {\"expect\": {\"ok\": {...}}} and one {\"expect\": {\"error\": {...}}}), \
                    rationale, and witness (the arguments of a call that asked for this capability, \
                    required when such calls were recorded; it must succeed); any other field \
                    refuses the blueprint"
            }
        },
        "required": ["blueprint"],
        "additionalProperties": false
    });
    let schema = match schema {
        serde_json::Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    };
    let mut tool = Tool::new(
        warden_api::TOOLSMITH_PROPOSE,
        "Proposes a new tool for a capability no tool offers. The host names it, chooses its \
         category, grants and limits; creating it (tool:create) always waits for an operator's \
         approval, so the answer is the blueprint's id, pending.",
        schema,
    );
    tool.title = Some("Propose a tool".into());
    tool
}
