use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::env::EnvGrant;
use crate::net::NetPattern;

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

/// The capabilities one call holds, as the operator granted them. Empty
/// means nothing: no directories, no network, no environment. A call gets
/// the intersection of this and what its plugin's manifest requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Grants {
    #[serde(default)]
    pub fs: Vec<FsGrant>,
    /// Hosts the call may reach (see [`crate::net`]).
    #[serde(default)]
    pub net: Vec<NetPattern>,
    /// Environment variables the call sees.
    #[serde(default)]
    pub env: Vec<EnvGrant>,
}

impl Grants {
    /// What a call allowed only because it reads runs with: the same
    /// directories, each at most read-only, no network, and the same
    /// environment (see [`crate::Effects::ReadOnly`]).
    pub fn read_only(&self) -> Grants {
        Grants {
            fs: self
                .fs
                .iter()
                .map(|g| FsGrant {
                    access: g.access.meet(FsAccess::Read),
                    ..g.clone()
                })
                .collect(),
            net: Vec::new(),
            env: self.env.clone(),
        }
    }
}
