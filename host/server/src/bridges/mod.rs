//! Bridged MCP servers in the running host: their configuration
//! (`[[bridge]]`, `[secrets]`), checking it into bridges, and keeping each
//! bridge's tools published in the gate while serving.

mod config;
mod docker;
mod live;
mod pinned;
mod plan;
mod secrets;

pub use config::{
    BridgeConfig, BridgeNetwork, BridgeRuntime, BridgeTransport, DefaultDecision, NetworkName,
    ScopeConfig, SecretSource, ToolLists, parse_duration,
};
pub use live::{LiveBridges, owner};
pub use plan::{Planned, plan_all};
