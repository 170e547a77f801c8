//! The blueprint's JSON Schemas: valid JSON Schema 2020-12, compilable,
//! bounded, and describing objects (MCP's `inputSchema` and
//! `outputSchema` are objects).

use serde_json::Value;

use crate::BlueprintError;
use crate::blueprint::MAX_SCHEMA_BYTES;

/// Checks that `schema` is a bounded, valid JSON Schema of an object.
pub(crate) fn object_schema(what: &str, schema: &Value) -> Result<(), BlueprintError> {
    valid(what, schema)?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(BlueprintError::Invalid {
            what: what.into(),
            reason: "must have `\"type\": \"object\"`".into(),
        });
    }
    Ok(())
}

/// Checks that `schema` is a bounded JSON Schema that compiles.
pub(crate) fn valid(what: &str, schema: &Value) -> Result<(), BlueprintError> {
    if schema.to_string().len() > MAX_SCHEMA_BYTES {
        return Err(BlueprintError::TooLarge {
            what: what.into(),
            limit: MAX_SCHEMA_BYTES,
        });
    }
    let invalid = |reason: String| BlueprintError::Invalid {
        what: what.into(),
        reason: format!("is not a valid JSON Schema: {reason}"),
    };
    if !schema.is_object() {
        return Err(invalid("it must be an object".into()));
    }
    jsonschema::meta::validate(schema).map_err(|e| invalid(e.to_string()))?;
    jsonschema::draft202012::new(schema).map_err(|e| invalid(e.to_string()))?;
    Ok(())
}
