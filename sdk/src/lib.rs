//! Write Warden tools as plain Rust functions.
//!
//! Owns: the guest side of the `warden:tool` WIT contract, the
//! [`Context`] a tool receives, [`ToolError`], and (through the
//! [`plugin`] attribute) the derivation of tool specs, JSON Schemas and the
//! `warden:manifest` section from Rust types at compile time.
//!
//! Does not own: anything the host decides (grants, policy, limits). A tool
//! sees only what its call was granted; a request outside the grant fails
//! as an ordinary I/O error.
//!
//! ```ignore
//! #[warden_sdk::plugin(name = "hello")]
//! mod hello {
//!     use warden_sdk::prelude::*;
//!
//!     #[derive(Deserialize)]
//!     pub struct Args {
//!         /// Who to greet.
//!         pub name: String,
//!     }
//!
//!     /// Greet someone.
//!     #[tool(name = "hello_greet", category = "communication",
//!            action = "comms:internal", side_effect = false)]
//!     fn greet(args: Args) -> Result<String, ToolError> {
//!         Ok(format!("hello, {}", args.name))
//!     }
//! }
//! ```
//!
//! See `docs/plugin-authoring.md` for the whole flow.

extern crate self as warden_sdk;

mod context;
mod error;

#[doc(hidden)]
pub mod __private;

pub use context::{Context, LogLevel};
pub use error::{ErrorKind, ToolError};
/// Turns a module of `#[tool]` functions into a Warden plugin component.
pub use warden_sdk_macros::plugin;

/// Everything a plugin module usually needs.
pub mod prelude {
    pub use crate::{Context, ErrorKind, LogLevel, ToolError};
    pub use serde::{Deserialize, Serialize};
}
