//! Anchors between the audit chains of hosts sharing one database.
//!
//! Attack: someone with write access to the shared database cutting a
//! replica's chain short (its tail deleted back to a tagged record, which
//! leaves a shorter chain that still verifies), replacing a chain from
//! some record on, or removing a whole chain with its registration, to
//! hide what that replica did. Each host records, on its own chain, the
//! heads of the other chains whenever they moved (a `chain-heads`
//! record, signed with its next checkpoint); verifying checks every
//! anchor against the chain it names: the record must still be there
//! with the hash it had. Cutting one chain then means cutting every chain
//! that anchored it, each of which is anchored by the others.
//!
//! What it cannot see: records appended and removed again between two
//! anchors, and a chain whose host never shared the database with another
//! (a single host's chain has nobody to anchor it: export its
//! `Verified::head`). A chain's public key is read from the database, so
//! a chain someone registered there with a key of their own verifies by
//! itself: with the deployment's audit root given, every chain's key must
//! carry the root's endorsement (`warden_signing::endorse_audit_key`),
//! which the database cannot make.

use serde::Serialize;

use crate::{Break, Verified};

/// Another host's chain in the shared database, as verifying found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherChain {
    /// The chain (its host key's id).
    pub chain: String,
    /// The public key registered with the chain, which its records'
    /// signatures were checked against.
    pub public_key: String,
    /// The walk's verdict: with the public key alone, the chain must end
    /// on a signed record.
    pub verdict: Result<Verified, Break>,
}

/// An anchor that no longer holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
pub enum AnchorBreak {
    /// Record `seq` of `chain`, anchored by record `at` of `anchored_in`,
    /// is gone: the chain was cut short (it ends at `last`) or removed
    /// (`last` none).
    Missing {
        chain: String,
        seq: u64,
        last: Option<u64>,
        anchored_in: String,
        at: u64,
    },
    /// Record `seq` of `chain` no longer has the hash record `at` of
    /// `anchored_in` anchored: the chain was replaced from there on.
    Rewritten {
        chain: String,
        seq: u64,
        anchored_in: String,
        at: u64,
    },
}

impl std::fmt::Display for AnchorBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnchorBreak::Missing {
                chain,
                seq,
                last: Some(last),
                anchored_in,
                at,
            } => write!(
                f,
                "chain {chain} ends at record {last}, but record {at} of chain {anchored_in} anchored its \
                 record {seq}: records were deleted from its end"
            ),
            AnchorBreak::Missing {
                chain,
                seq,
                last: None,
                anchored_in,
                at,
            } => write!(
                f,
                "chain {chain} is gone, but record {at} of chain {anchored_in} anchored its record {seq}: \
                 the chain was removed"
            ),
            AnchorBreak::Rewritten {
                chain,
                seq,
                anchored_in,
                at,
            } => write!(
                f,
                "record {seq} of chain {chain} is not the record that record {at} of chain {anchored_in} \
                 anchored: the chain was replaced from there on"
            ),
        }
    }
}

/// A chain whose key the deployment's audit root did not endorse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
pub enum Unendorsed {
    /// The chain's registration carries no endorsement.
    Missing { chain: String },
    /// The endorsement is not the root's signature of the chain's key.
    Invalid { chain: String },
}

impl std::fmt::Display for Unendorsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unendorsed::Missing { chain } => write!(
                f,
                "chain {chain} has no endorsement by the audit root: it was not registered by a \
                 replica holding the root key"
            ),
            Unendorsed::Invalid { chain } => write!(
                f,
                "chain {chain}'s endorsement is not the audit root's signature of its key: the \
                 registration was forged or altered"
            ),
        }
    }
}

/// Every other chain of a shared database, and every anchor checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Others {
    pub chains: Vec<OtherChain>,
    /// Anchors checked (one per chain head a `chain-heads` record names).
    pub anchors: u64,
    pub broken_anchors: Vec<AnchorBreak>,
    /// Chains (this host's included) whose keys the audit root endorsed,
    /// when verifying was given the root.
    pub endorsed: u64,
    /// Chains (this host's included) whose keys it did not.
    pub unendorsed: Vec<Unendorsed>,
}

impl Others {
    /// Whether every other chain verified, every anchor held and, with a
    /// root, every chain was endorsed.
    pub fn ok(&self) -> bool {
        self.broken_anchors.is_empty()
            && self.unendorsed.is_empty()
            && self.chains.iter().all(|c| c.verdict.is_ok())
    }
}
