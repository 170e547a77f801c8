//! The one path every call takes.
//!
//! Owns: the table of tools and the backend and grants serving each
//! (swapped whole when plugins are added, replaced or removed), the
//! agents and their compiled policies, the call path — identity, lookup,
//! prepare the call once, decide, ask a person, validate arguments
//! (validators compiled once, at registration), dispatch, audit, and let
//! progressive trust learn from the outcome — batching with bounded
//! concurrency, and the call span that carries agent, session, task and
//! request ids. Also on this path: `request_capability` (time-boxed
//! grants, judged, asked and audited like any call), the approvals book,
//! the trust states of agents, and the tasks each session ran (ended with
//! the session).
//!
//! Does not own: running tools (backends do), the decision logic
//! (`warden-policy`), durable storage (through [`Journal`],
//! [`GrantStore`], [`TrustStore`] and the approvals ledger), or transport
//! (the MCP crate).
//!
//! [`Journal`]: warden_api::Journal

mod agents;
mod approval;
mod ask;
mod book;
mod builder;
mod call;
mod capability;
mod durable;
mod error;
mod gate;
mod paths;
mod propose;
mod question;
mod resolve;
mod sessions;
mod table;
mod target;
mod trust;
mod validate;

pub use agents::PolicyEnv;
pub use approval::{NoApprover, PendingApprovals};
pub use ask::pending_envelope;
pub use book::ApprovalBook;
pub use builder::GateBuilder;
pub use call::vcs_op;
pub use durable::{Clock, GrantStore, SystemClock};
pub use error::GateError;
pub use gate::{Gate, ListingChange};
pub use paths::CallPaths;
pub use question::{SHOWN_CHARS, shown_arguments};
pub use table::{Registration, TableChange};
pub use trust::{DEFAULT_DIFFICULTY, Stored, TrustKeeper, TrustStore};
pub use validate::ArgsValidator;
pub use warden_api::{Answerer, ApprovalAnswer, ApprovalRequest, Approver, Attribution};
