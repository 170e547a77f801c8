//! Warden's decision engine. Pure: no I/O, no async, no clock reads.
//!
//! Attack: an agent (confused, or steered by injected text) calling a tool
//! it should not, or calling an allowed tool in a way that does damage —
//! a destructive command hidden behind a harmless one or a wrapper, a path
//! that climbs out of the workspace, a side effect in a read-only mode.
//! Every call is decided here from data alone, in a fixed order of layers
//! (see [`AgentPolicy::decide`]), and the answer says which layer and which
//! rule decided and what would change it.
//!
//! Owns: access levels and their categories, sub-constraints, action types,
//! rules, path-aware matching, modes, the circuit-breaker layer (protected
//! paths, and the command lines `warden-shell` flags), time-boxed capability
//! grants (the caller passes the time), trust.
//! Does not own: reading files or clocks, asking people, running tools, nor
//! reading command lines: shell-aware matching, the read-only set and the
//! command-line circuit breakers come from `warden-shell`, the one Warden
//! crate this one depends on (pure too). Categories and the action-type
//! taxonomy come from `warden-api` at construction, as data.

mod action;
mod answer_bounds;
mod capability;
pub mod config;
mod constraints;
mod constraints_check;
mod decision;
mod engine;
mod error;
mod facts;
pub mod glob;
mod grant_request;
mod grants;
mod index;
mod level;
mod mode;
pub mod path;
mod principal;
mod protect;
mod renamed;
mod rule;
mod specifier;
pub mod trust;
mod vcs;

pub use action::{ActionSelector, ActionTypes};
pub use answer_bounds::never_always;
pub use capability::{Boundary, Capability, CapabilityError, CapabilityGrant};
pub use constraints::{
    CodeExecution, ConstraintOverrides, FileScope, GitAccess, NetworkMode, SubConstraints,
    TerminalAccess,
};
pub use decision::{Decision, Layer, Verdict};
pub use engine::{AgentPolicy, Policy, TrustLevels};
pub use error::PolicyError;
pub use facts::{Call, Env, Isolation, ToolFacts};
pub use grant_request::{DEFAULT_MAX_TTL_MS, GrantBounds, Reach, RequestVerdict, judge_request};
pub use grants::{GrantSet, decide_with_grants};
pub use level::{LEVEL_CATEGORIES, Level, known_categories};
pub use mode::Mode;
pub use principal::{PrincipalFacts, PrincipalRulesConfig};
pub use protect::{DEFAULT_READ, DEFAULT_WRITE, Protection};
pub use renamed::{renamed_capability, renamed_rule, renamed_tool};
pub use rule::{Rule, RuleList, RuleSet, SpecifierKind};
pub use vcs::VcsOp;

/// Creating a tool: a circuit breaker, asked of a person in every mode,
/// whatever the rules allow.
pub const TOOL_CREATE: &str = "tool:create";

/// The host's own tools that create tools (their action type is
/// [`TOOL_CREATE`]): no allow rule may name them, in the config or from
/// an "always allow" answer, since none could ever take effect.
pub const BREAKER_TOOLS: &[&str] = &["toolsmith_propose"];
