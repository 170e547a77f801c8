//! The running Warden host, as a library.
//!
//! Owns: the configuration file (`warden.toml`) and how plugin grants and
//! signers are spelled; choosing the configuration (a named file, a found
//! one that may not widen trust, the embedded defaults); the state
//! directory and the keys derived from its host key; loading a host —
//! the runtime, every plugin admitted by its signature, the sandboxed
//! tools — and a gate builder with all of them registered; the assembled
//! running host ([`Host`]): the store behind the gate's durable hooks,
//! approvals, capability requests, progressive trust and its periodic
//! tick, hot reload (install, remove, watch), the admin API and the MCP
//! transports.
//!
//! Does not own: any step of a call (the gate and its backends do; this
//! crate assembles them, and is in the middle of a call only to hold one
//! for a plugin still loading at start-up: `pending`), argument parsing or
//! output (the `warden` binary).

mod agents;
pub mod bench;
pub mod bridges;
pub mod config;
mod defaults;
mod error;
mod first_load;
mod found_config;
pub mod gaps;
mod grant_spec;
mod host;
pub mod keys;
pub mod oauth;
mod offline;
mod operator;
mod pending;
mod plugin_sync;
pub mod policy_check;
mod reload;
mod serve;
mod shared_rules;
mod signers;
mod sources;
pub mod state;
mod state_guard;
mod tick;
pub mod toolsmith;

pub use agents::{AgentOverrides, agents, env};
pub use config::{Config, StateConfig};
pub use defaults::{DEV_KEY_FILE, bundled_dir, choose as choose_config, embedded};
pub use error::ServerError;
pub use found_config::widenings;
pub use grant_spec::grants;
pub use host::{HostOptions, LimitOverrides, Loaded, registration};
pub use offline::OfflinePlugins;
pub use reload::{LivePlugins, NamedGrants};
pub use serve::{Host, SERVE_AGENT, ServeOptions, TRUST_TICK, state_dir};
pub use signers::{PublisherConfig, SignersConfig};
pub use sources::{StoreGrants, StoreTrust};
pub use state_guard::check as check_state_reach;
