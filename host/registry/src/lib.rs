//! Plugins on disk.
//!
//! Owns: the loading policy (a component is admitted only when a trusted
//! publisher's detached signature covers its exact bytes and manifest,
//! checked before any of its code runs), the installed plugins under
//! `STATE/plugins` (stored by digest, with an index of names, versions,
//! signers and tools), the memo that lets a start admit an unchanged file
//! without hashing it again, conflict checks between plugins, signing
//! files, and watching a directory for plugins to add, replace or remove.
//!
//! Does not own: the cryptography (`warden-signing`), compiling and running
//! components (`warden-runtime`), or swapping tools into a running host
//! (the gate's `replace`, driven by the CLI).

mod admission;
mod admitted;
mod error;
mod fsutil;
mod memo;
mod registry;
mod sign;
mod store;
mod watch;

pub use admission::{Admission, AdmissionPolicy, digest_of, read_signature, signature_path};
pub use admitted::{Admitted, LoadOrder, admit_files, load_admitted};
pub use error::RegistryError;
pub use memo::AdmissionMemo;
pub use registry::{Candidate, Registry, component_files, load_file, load_files};
pub use sign::sign_file;
pub use store::Installed;
pub use watch::{DirWatcher, WatchEvent};
