//! Warden's toolsmith: from a recurring capability gap to a validated,
//! signed, live tool, never without a person (`docs/toolsmith.md`).
//!
//! Owns: the capability signature (`domain:action`) an unfulfilled
//! request is filed under, and the name a generated tool for it gets
//! (`gen_{domain}_{action}`). The gap log itself is durable state (the
//! store's `record_gap`), fed by the gate. Blueprints, the builder, the
//! validation gate and activation are not built yet.
//!
//! Does not own: deciding whether a request is allowed (the gate and the
//! policy), or where gaps are kept (the store).

mod signature;

pub use signature::{CapabilitySig, SignatureError};
