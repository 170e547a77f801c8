use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CallLimits, Envelope, Grants, ToolSpec};

/// A boxed, sendable future: the traits below are object-safe so the MCP
/// server can hold a `dyn ToolHost`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is calling. Every id goes into every log line of the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CallContext {
    pub agent: String,
    pub session: String,
    #[serde(default)]
    pub task: Option<String>,
    pub request_id: String,
}

/// A call as an agent makes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CallRequest {
    pub tool: String,
    pub args: Value,
    pub context: CallContext,
}

/// What the host serves to agents: the tools an agent may see, and calls.
pub trait ToolHost: Send + Sync {
    /// The tools `agent` may use, sorted by name.
    fn list_tools(&self, agent: &str) -> Vec<ToolSpec>;

    /// Runs one call through the whole call path. Never fails: every
    /// problem is an error envelope.
    fn call(&self, request: CallRequest) -> BoxFuture<'_, Envelope>;

    /// Runs calls concurrently (at most `max_concurrency` at once when
    /// given). One failing call never aborts its siblings; results come
    /// back in request order.
    fn call_batch(
        &self,
        requests: Vec<CallRequest>,
        max_concurrency: Option<usize>,
    ) -> BoxFuture<'_, Vec<Envelope>>;
}

/// A call as a backend receives it: already looked up, decided and
/// validated, with the capabilities it was granted.
#[derive(Debug, Clone, Copy)]
pub struct BackendCall<'a> {
    pub tool: &'a ToolSpec,
    pub args: &'a Value,
    pub context: &'a CallContext,
    pub grants: &'a Grants,
    pub limits: CallLimits,
}

/// Something that runs tools: the wasm runtime, a Docker sandbox, an MCP
/// bridge.
pub trait Backend: Send + Sync {
    /// The tools this backend serves.
    fn tools(&self) -> Vec<ToolSpec>;

    /// True when calls run isolated from the host (a wasm instance, a
    /// container); policies may require it for code execution.
    fn isolated(&self) -> bool;

    /// Runs one call. Never fails: every problem is an error envelope.
    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope>;
}
