//! Warden's toolsmith: from a recurring capability gap to a validated,
//! signed, live tool, never without a person (`docs/toolsmith.md`).
//!
//! Owns: the capability signature (`domain:action`) an unfulfilled
//! request is filed under, and the name a generated tool for it gets
//! (`gen_{domain}_{action}`); blueprints (what an author may propose,
//! strictly read and bounded); the facts the host derives from one
//! (name, category, action type, grants, side effect); what a
//! `tool:create` approval binds to; the lifecycle's legal moves; the
//! builder's identity (its recipe: toolchain, layout, and the
//! `Cargo.toml`, lock file and cargo configuration the host writes). The
//! gap log and the blueprints themselves are durable state (the store),
//! fed by the gate and the server; the builder image and the build
//! container are the sandbox crate's; the validation gate, signing and
//! activation are the server's (`warden_server::toolsmith`). Also the
//! example tool's source the sampling author shows a model.
//!
//! Does not own: deciding whether a request is allowed (the gate and the
//! policy), where gaps and blueprints are kept (the store), or digests
//! (the signing crate; this crate gives the canonical texts).

mod approval;
mod blueprint;
mod builder;
mod cases;
mod derive;
mod error;
mod example;
mod judge;
mod schema;
mod signature;
mod state;

pub use approval::Binding;
pub use blueprint::{
    Blueprint, Body, Case, ErrorExpect, Expect, FieldExpect, Limits, MAX_CASES, MAX_SCHEMA_BYTES,
    MAX_TEXT, MAX_TITLE, MIN_CASES, OkExpect,
};
pub use builder::{
    CARGO_CONFIG, CARGO_LOCK, CARGO_TOML, TARGET, TEMPLATE_LIB_RS, TOOLCHAIN, builder_recipe,
    layout,
};
pub use derive::{
    CapabilityRule, DeriveFrom, Derived, FsGrant, FsMode, Network, Sandbox, ToolLimits, derive,
};
pub use error::{BlueprintError, TransitionError};
pub use example::EXAMPLE_LIB_RS;
pub use judge::{NegativeCase, Observed, judge, negative_cases};
pub use signature::{CapabilitySig, SignatureError};
pub use state::State;

/// The longest tool name (MCP clients cut or refuse longer ones).
pub const MAX_TOOL_NAME: usize = 64;

#[cfg(test)]
mod tests;
