//! The `request_capability` tool: beside the agent's own tools when the
//! host has a capability desk (reference 004, "Dynamic Acquisition").

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

pub(crate) const NAME: &str = warden_api::REQUEST_CAPABILITY;

pub(crate) fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "capability": {"type": "string", "description": "`tool:NAME`, `category:NAME`, `action:CATEGORY:ACTION` or `level:NAME`"},
            "justification": {"type": "string", "description": "Why the task needs it (the goal it serves)."},
            "ttl": {"type": "integer", "minimum": 1, "description": "How long, in seconds."},
            "boundary": {
                "type": "object",
                "properties": {
                    "paths": {"type": "array", "items": {"type": "string"}},
                    "hosts": {"type": "array", "items": {"type": "string"}},
                    "branches": {"type": "array", "items": {"type": "string"}}
                },
                "additionalProperties": false
            }
        },
        "required": ["capability", "justification", "ttl"],
        "additionalProperties": false
    });
    let schema = match schema {
        serde_json::Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    };
    let mut tool = Tool::new(
        NAME,
        "Asks for a time-boxed capability grant when a call was denied for lack of one. \
         Low-risk requests within the operator's bounds are granted at once; others wait for \
         a person's approval: retry the same request after it is answered.",
        schema,
    );
    tool.title = Some("Request a capability".into());
    tool
}
