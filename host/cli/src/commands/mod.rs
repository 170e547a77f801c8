//! One module per command.

pub mod bench;
pub mod call;
pub mod config;
pub mod inspect;
pub mod policy;
pub mod setup;
pub mod tools;
