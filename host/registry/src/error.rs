use std::path::PathBuf;

use thiserror::Error;
use warden_signing::VerifyError;

/// Why a plugin could not be admitted, installed, removed or loaded. Each
/// names the plugin file (or name) and what failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a usable plugin component: {reason}")]
    NotAPlugin { path: PathBuf, reason: String },
    #[error("{path}: the signature file {sig} is unreadable: {reason}")]
    BadSignatureFile {
        path: PathBuf,
        sig: PathBuf,
        reason: String,
    },
    #[error("{path} (plugin `{plugin}`) refused: {source}")]
    Refused {
        path: PathBuf,
        plugin: String,
        source: VerifyError,
    },
    #[error("{path}: {source}")]
    Load {
        path: PathBuf,
        source: warden_runtime::RuntimeError,
    },
    #[error(
        "{path}: tool `{tool}` is already exported by installed plugin `{other}`; \
         remove one of them (nothing was installed)"
    )]
    Conflict {
        path: PathBuf,
        tool: String,
        other: String,
    },
    #[error("no plugin named `{name}` is installed")]
    NotInstalled { name: String },
    #[error("{path}: {message}")]
    Store { path: PathBuf, message: String },
    #[error("{dir} holds no .wasm plugin components")]
    EmptyDir { dir: PathBuf },
}

impl RegistryError {
    pub(crate) fn store(path: &std::path::Path, message: impl std::fmt::Display) -> RegistryError {
        RegistryError::Store {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }
}
