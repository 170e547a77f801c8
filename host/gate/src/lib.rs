//! The one path every call takes.
//!
//! Owns: the table of tools and the backend and grants serving each
//! (swapped whole when plugins are added, replaced or removed), the
//! agents and their compiled policies, the call path — identity, lookup,
//! decide, ask a person, validate arguments (validators compiled once, at
//! registration), dispatch, audit — batching with bounded concurrency, and
//! the call span that carries agent, session, task and request ids.
//!
//! Does not own: running tools (backends do), the decision logic
//! (`warden-policy`), or transport (the MCP crate).

mod agents;
mod approval;
mod book;
mod durable;
mod error;
mod gate;
mod paths;
mod question;
mod resolve;
mod table;
mod target;
mod validate;

pub use agents::PolicyEnv;
pub use approval::{NoApprover, PendingApprovals};
pub use book::{ApprovalBook, BookError};
pub use durable::{Clock, GrantSource, SystemClock};
pub use error::GateError;
pub use gate::{Gate, GateBuilder, pending_envelope};
pub use paths::CallPaths;
pub use question::{SHOWN_CHARS, shown_arguments};
pub use table::{Registration, TableChange};
pub use validate::ArgsValidator;
pub use warden_api::{Answerer, ApprovalAnswer, ApprovalRequest, Approver, Attribution};
