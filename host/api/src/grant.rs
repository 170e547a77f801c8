use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Filesystem access, ordered: `None < Read < ReadWrite`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum FsAccess {
    #[default]
    None,
    Read,
    ReadWrite,
}

impl FsAccess {
    /// The weaker of two accesses: how grants intersect.
    pub fn meet(self, other: FsAccess) -> FsAccess {
        self.min(other)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FsAccess::None => "none",
            FsAccess::Read => "read",
            FsAccess::ReadWrite => "read-write",
        }
    }
}

/// One directory made visible to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FsGrant {
    /// The directory on the host. Must exist.
    pub host_path: PathBuf,
    /// Where the guest sees it: an absolute guest path such as `/workspace`.
    pub guest_path: String,
    pub access: FsAccess,
}

/// The capabilities one call holds. Empty means nothing: no directories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Grants {
    #[serde(default)]
    pub fs: Vec<FsGrant>,
}
