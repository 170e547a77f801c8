//! One module per command.

pub mod approvals;
pub mod audit;
pub mod bench;
pub mod bridge;
pub mod call;
pub mod config;
pub mod grants;
pub mod guardrail;
pub mod inspect;
pub mod keys;
pub mod plugins;
pub mod policy;
pub mod sandbox;
pub mod serve;
pub mod setup;
pub mod tools;
pub mod toolsmith;
pub mod trust;
