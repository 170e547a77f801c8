//! Warden's durable state, behind one interface ([`Store`]) with the
//! embedded SQLite database (`warden.db` in the state directory, no
//! server to run) as its default backend ([`SqliteStore`]).
//!
//! Owns: the [`Store`] interface, the gate's hooks on it ([`Hooks`]),
//! and for each backend the schema and its versioned migrations and
//! every read and write of rules added by "always allow", approvals
//! (pending, answered, used), capability grants, trust state per agent,
//! the hash-chained signed audit log, and (room for) toolsmith
//! blueprints. Each logical change is one transaction, committed before
//! the caller reports it done, so a killed host loses nothing it
//! reported; concurrent audit appends share one transaction (group
//! commit), under "normal" durability an audit record is durable in the
//! host's pending audit log before its commit (`pending.rs`), every
//! commit's last record is tagged and checkpoints are signed. The host's signing key lives beside the database
//! ([`host_key`]).
//!
//! Does not own: decisions (`warden-policy`), cryptography
//! (`warden-signing`), or when things are written (the gate and the CLI
//! call in). The only crate that uses a database driver.

mod anchors;
mod approvals;
mod audit;
mod blueprints;
mod chain;
mod checkpoint;
mod db;
mod error;
mod events;
mod gaps;
mod grants;
mod hooks;
mod interface;
mod key;
mod migrate;
mod pending;
mod pins;
mod plugins;
mod postgres;
mod private;
mod rules;
mod sessions;
mod sqlite;
mod trust;
mod tx;
mod verify;
mod writer;

pub use anchors::{AnchorBreak, OtherChain, Others, Unendorsed};
pub use audit::AuditRecord;
pub use blueprints::{
    BlueprintArtifact, BlueprintMove, BlueprintState, NewBlueprint, StoredBlueprint,
};
pub use checkpoint::{SIGN_EVERY, SIGN_EVERY_RECORDS};
pub use db::{Durability, SqliteStore, now_ms};
pub use error::StoreError;
pub use gaps::{GapCounts, GapRule, GapSummary, GapTally, NewGap};
pub use hooks::Hooks;
pub use interface::{Closed, Store};
pub use key::{existing_key, host_key};
pub use migrate::SCHEMA_VERSION;
pub use pins::DefinitionPin;
pub use plugins::{PluginFiles, SharedPlugin};
pub use postgres::{PG_SCHEMA_VERSION, PgStore};
pub use private::private_dir;
pub use rules::StoredRule;
pub use trust::{StoredTrust, StoredTrustChange};
pub use verify::{Break, Verified};

#[cfg(test)]
mod tests;
