//! Warden's WebAssembly runtime.
//!
//! Owns: the one wasmtime [`Engine`](wasmtime::Engine) of the process (async,
//! epoch interruption, optional pooling allocator), the on-disk compile
//! cache, one `InstancePre` per plugin, and the per-call path: a fresh
//! `Store` built from the call's grants (directories, environment, raw
//! sockets behind an address check, outgoing HTTP through a checking
//! hook), limits enforced, the result or the failure turned into an
//! [`Envelope`](warden_api::Envelope).
//!
//! Does not own: deciding whether a call may run, or validating its
//! arguments (the gate does both before a call gets here).
//!
//! wasmtime appears in this crate only; the architecture test enforces it.

mod bindings;
mod cache;
mod call_store;
mod denials;
mod engine;
mod error;
mod fs_entries;
mod host_api;
mod http;
mod invoke;
mod limits;
mod lookup;
mod manifest;
mod net_memo;
mod open_checks;
mod output;
mod plugin;
mod sockets;
mod spare;
mod special_files;
mod state;
mod wasi;

pub use cache::{CacheKey, Swept, UNUSED_FOR};
pub use engine::{Runtime, RuntimeConfig};
pub use error::RuntimeError;
pub use http::{CappedBody, ConnectionTask, Egress, HttpLimits};
pub use manifest::{Inspection, component_digest, inspect, manifest_section, read_manifest};
pub use plugin::{LoadOrigin, Plugin};
