//! Warden's shared domain types and the traits that join its crates.
//!
//! Owns: tool specs and their validation, the plugin manifest format, the
//! categories and action-type taxonomy, capability grants (files, network
//! patterns and the pure address checks, environment), call limits, the
//! result envelope agents see, the [`ToolHost`] / [`Backend`] traits, and
//! the [`Journal`] / [`ApprovalLedger`] traits durable state is written
//! through, and JSON's canonical form (RFC 8785) that digests of JSON
//! values are taken over.
//!
//! Does not own: any I/O, any runtime framework, any policy. Depends on
//! serde and thiserror only, so the plugin SDK can share these types inside
//! a WebAssembly guest.

mod action;
mod admin;
mod approval;
mod blueprints;
mod canonical;
mod category;
mod clock;
mod code;
mod env;
mod envelope;
mod error;
mod gaps;
mod grant;
mod guardrail;
mod hooks;
mod host;
mod journal;
mod limits;
mod manifest;
pub mod net;
mod operator;
mod principal;
mod sessions;
mod spec;
mod trust;

pub use action::{ActionType, BUILTIN_ACTION_TYPES};
pub use admin::{AdminError, BridgeAdmin, PluginAdmin, ToolsmithAdmin};
pub use approval::{
    AnswerError, Answerer, ApprovalAnswer, ApprovalChannel, ApprovalRequest, Approvals, Approver,
    Attribution,
};
pub use blueprints::{
    AuthorBrief, BlueprintDesk, ProposalRefused, ProposedBlueprint, SamplingAuthor,
    TOOLSMITH_PROPOSE,
};
pub use canonical::canonical_json;
pub use category::Category;
pub use clock::{Clock, SystemClock};
pub use code::{HostCode, UnknownHostCode};
pub use env::{EnvGrant, Secret, check_env_key};
pub use envelope::{Envelope, ErrorType};
pub use error::SpecError;
pub use gaps::{GapLog, Unfulfilled};
pub use grant::{FsAccess, FsGrant, Grants};
pub use guardrail::{Guardrail, GuardrailError, GuardrailViolation};
pub use hooks::{CallEvents, CallHooks, LogLevel};
pub use host::{
    Backend, BackendCall, BoxFuture, CallContext, CallRequest, Effects, Isolation, PathGuard,
    REQUEST_CAPABILITY, ToolHost, VcsFacts, VcsOperation,
};
pub use journal::{
    ApprovalLedger, AuditEvent, ChainHead, Journal, JournalError, OpenApproval, PinnedTool,
};
pub use limits::CallLimits;
pub use manifest::{
    CapabilityGap, MANIFEST_SECTION, MANIFEST_VERSION, Manifest, PluginId, RequestedCapabilities,
    WIT_PACKAGE,
};
pub use operator::{
    AgentSummary, AuditEntry, AuditQuery, ChainSummary, GrantSummary, OperatorView, TrustChange,
};
pub use principal::Principal;
pub use sessions::SessionStates;
pub use spec::{Example, MAX_TOOL_NAME, ToolName, ToolSpec, renamed, render_template};
pub use trust::{TrustAdmin, TrustError};
