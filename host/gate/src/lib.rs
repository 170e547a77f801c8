//! The one path every call takes.
//!
//! Owns: the table of tools and the backend serving each, argument
//! validation against each tool's params schema (validators compiled once,
//! at registration), batching with bounded concurrency, and the call span
//! that carries agent, session, task and request ids.
//!
//! Does not own: running tools (backends do) or transport (the MCP crate).
//! Policy decisions (allow / ask / deny) are the next step on this path.

mod error;
mod gate;
mod validate;

pub use error::GateError;
pub use gate::{Gate, GateBuilder};
pub use validate::ArgsValidator;
