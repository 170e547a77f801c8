use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The class of a failed call, for programmatic dispatch by agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorType {
    /// The arguments do not match the tool's params schema.
    ArgumentValidationError,
    /// The tool ran and reported an error.
    ToolError,
    /// A per-call limit (deadline, memory, output) was hit.
    LimitExceeded,
    /// The tool trapped or panicked.
    ToolCrashed,
    /// No tool of that name is loaded.
    UnknownTool,
    /// The host refused the call (grant, policy).
    PermissionDenied,
    /// The host could not run the call (a host-side failure).
    HostError,
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The result of one call, as agents see it:
/// `{"status":"ok","data":...}`,
/// `{"status":"error","error_type":...,"message":...,"domain_code":...}`,
/// or, for a tool an external MCP server serves (the bridge),
/// `{"status":"forwarded","result":...}`: the server's `tools/call` result
/// as it gave it (content blocks, `structuredContent`, `isError`), which
/// the MCP face passes on unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Envelope {
    Ok {
        data: Value,
    },
    Error {
        error_type: ErrorType,
        message: String,
        domain_code: String,
    },
    Forwarded {
        /// An MCP `CallToolResult` object (`_meta` already dropped).
        result: Value,
    },
}

impl Envelope {
    pub fn ok(data: Value) -> Envelope {
        Envelope::Ok { data }
    }

    pub fn error(
        error_type: ErrorType,
        domain_code: impl Into<String>,
        message: impl Into<String>,
    ) -> Envelope {
        Envelope::Error {
            error_type,
            message: message.into(),
            domain_code: domain_code.into(),
        }
    }

    /// A success: an ok envelope, or a forwarded result that is not
    /// marked `isError`.
    pub fn is_ok(&self) -> bool {
        match self {
            Envelope::Ok { .. } => true,
            Envelope::Error { .. } => false,
            Envelope::Forwarded { result } => {
                result.get("isError").and_then(Value::as_bool) != Some(true)
            }
        }
    }

    /// The envelope as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
