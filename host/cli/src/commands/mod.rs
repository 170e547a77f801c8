//! One module per command.

pub mod bench;
pub mod call;
pub mod inspect;
pub mod setup;
