//! What a `tool:create` approval binds to.
//!
//! Attack: approve-then-swap. A person approves one blueprint, and what
//! gets built is another: an edited body, a changed builder image, wider
//! grants in the config since. The approval names the digests of all
//! three as they were when the person said yes; before anything is
//! built they are computed again, and any difference voids it.

use serde::{Deserialize, Serialize};

/// The digests (`sha256:<hex>`) an approval is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The blueprint's canonical text.
    pub blueprint: String,
    /// The builder's identity (its image recipe).
    pub builder: String,
    /// The resolved grants (`[toolsmith.sandbox]`, canonical).
    pub grants: String,
}

impl Binding {
    /// What differs between the approved binding and `now`; empty when
    /// the approval still holds.
    pub fn changed(&self, now: &Binding) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.blueprint != now.blueprint {
            changed.push("the blueprint");
        }
        if self.builder != now.builder {
            changed.push("the builder image");
        }
        if self.grants != now.grants {
            changed.push("the grants");
        }
        changed
    }
}
