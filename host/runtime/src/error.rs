use std::path::PathBuf;

use thiserror::Error;

/// Why the runtime could not start or load a plugin. Call failures are not
/// errors here: they are error envelopes.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RuntimeError {
    #[error("creating the wasm engine: {0}")]
    CreateEngine(String),
    #[error("compile cache at {path}: {source}")]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading plugin {path}: {source}")]
    ReadPlugin {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("plugin {path} is not a valid WebAssembly component: {reason}")]
    InvalidComponent { path: PathBuf, reason: String },
    #[error("plugin {path} has no usable `warden:manifest` section: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("plugin {path} cannot be loaded as admitted: {reason}")]
    Changed { path: PathBuf, reason: String },
    #[error("compiling plugin {path}: {reason}")]
    Compile { path: PathBuf, reason: String },
    #[error("plugin {path} cannot be linked: {reason}")]
    Link { path: PathBuf, reason: String },
    #[error("plugin {path}: `tools()` disagrees with its manifest: {reason}")]
    ManifestMismatch { path: PathBuf, reason: String },
}
