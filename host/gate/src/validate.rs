//! Argument validation: the call's arguments against the tool's params
//! schema, before any backend sees them. Errors name the offending field
//! by JSON pointer so an agent can fix the call.

use serde_json::Value;
use warden_api::ToolSpec;

use crate::GateError;

/// A tool's compiled params schema.
#[derive(Debug)]
pub struct ArgsValidator {
    validator: jsonschema::Validator,
}

/// How many schema violations one error message lists.
const MAX_REPORTED: usize = 5;

impl ArgsValidator {
    /// Builds, once per process, what every schema compile first needs
    /// (the JSON Schema meta-schema's own validator, which checks each
    /// params schema as it compiles). That costs about 3 ms of CPU on a
    /// 2-core VM against 20 µs for each compile after it; a host starting
    /// calls this on a spare thread, so the first registration, and the
    /// first call waiting for it, do not pay it. Later calls return at
    /// once.
    pub fn prepare() {
        let _ = jsonschema::meta::is_valid(&Value::Object(serde_json::Map::new()));
    }

    /// Compiles the params schema and checks the tool's examples against it.
    pub fn new(spec: &ToolSpec) -> Result<ArgsValidator, GateError> {
        let validator = jsonschema::validator_for(&spec.params_schema).map_err(|e| {
            GateError::InvalidSchema {
                tool: spec.name.to_string(),
                reason: e.to_string(),
            }
        })?;
        let this = ArgsValidator { validator };
        for (i, example) in spec.examples.iter().enumerate() {
            this.check(&example.args)
                .map_err(|reason| GateError::InvalidExample {
                    tool: spec.name.to_string(),
                    index: i + 1,
                    reason,
                })?;
        }
        Ok(this)
    }

    /// `Ok` when `args` is valid; otherwise a message listing each problem
    /// with the path of the field at fault (`/` is the arguments object).
    pub fn check(&self, args: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(MAX_REPORTED + 1)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                format!("at `{path}`: {e}")
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        let more = if problems.len() > MAX_REPORTED {
            "; ..."
        } else {
            ""
        };
        Err(format!(
            "{}{more}",
            problems
                .iter()
                .take(MAX_REPORTED)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ))
    }
}
