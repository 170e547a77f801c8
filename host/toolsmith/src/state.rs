//! A blueprint's lifecycle, and the only moves between its states.
//!
//! Attack: a blueprint reaching a build, or a tool going live, by any
//! path that skips the person: every move is checked here (and made in
//! the store only from the state it was checked against).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::TransitionError;

/// Where a blueprint stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Authored; waits for a person (`tool:create`).
    Pending,
    /// Refused by a person, or expired without an answer.
    Rejected,
    /// A person approved it, bound to its digests; waits for the builder.
    Approved,
    Building,
    Validating,
    /// Build or validation failed; kept with the reason.
    Failed,
    Validated,
    Active,
    /// A newer version went live.
    Superseded,
    Retired,
}

impl State {
    pub const ALL: [State; 10] = [
        State::Pending,
        State::Rejected,
        State::Approved,
        State::Building,
        State::Validating,
        State::Failed,
        State::Validated,
        State::Active,
        State::Superseded,
        State::Retired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Rejected => "rejected",
            State::Approved => "approved",
            State::Building => "building",
            State::Validating => "validating",
            State::Failed => "failed",
            State::Validated => "validated",
            State::Active => "active",
            State::Superseded => "superseded",
            State::Retired => "retired",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether `self -> to` is a legal move.
    pub fn can_move(self, to: State) -> bool {
        use State::*;
        matches!(
            (self, to),
            (Pending, Rejected | Approved)
                // An approval that no longer holds asks again.
                | (Approved, Building | Pending | Rejected)
                | (Building, Validating | Failed)
                | (Validating, Validated | Failed)
                | (Validated, Active | Rejected | Failed)
                | (Active, Superseded | Retired)
                // Rollback, or retiring an old version.
                | (Superseded, Active | Retired)
        )
    }

    /// `Ok` when `self -> to` is legal.
    pub fn check_move(self, to: State) -> Result<(), TransitionError> {
        if self.can_move(to) {
            Ok(())
        } else {
            Err(TransitionError { from: self, to })
        }
    }

    /// No move leads out of it.
    pub fn is_final(self) -> bool {
        State::ALL.iter().all(|to| !self.can_move(*to))
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
