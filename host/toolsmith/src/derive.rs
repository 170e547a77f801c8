//! What the host derives from a blueprint: the tool's name, category,
//! action type, grants and limits, and its side-effect flag.
//!
//! Attack: an author choosing any of these: a name that shadows a
//! built-in or reads as another tool, a category an agent's level
//! already allows, an action type nobody asks about, a network or file
//! grant. None of them is read from the blueprint: the name comes from
//! the capability signature, the category and action type from the
//! operator's `[toolsmith]` (the action type must exist in the
//! taxonomy), the grants and limits only from `[toolsmith.sandbox]`, and
//! the side-effect flag from those grants.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Blueprint, BlueprintError};

/// `[toolsmith.sandbox]`: the only source of a generated tool's grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Sandbox {
    /// Directories the tool may open. Default none.
    pub fs: Vec<FsGrant>,
    /// Where it may connect. Default `"none"`.
    pub network: Network,
    /// Its limits per call.
    pub limits: ToolLimits,
}

/// A directory a generated tool may open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FsGrant {
    pub path: String,
    pub mode: FsMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FsMode {
    Ro,
    Rw,
}

/// `"none"`, or `{ allow = ["host:port", ...] }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    #[default]
    None,
    Allow(Vec<String>),
}

/// Limits of one call of a generated tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ToolLimits {
    /// Wall-clock deadline. Default 5000 ms.
    pub deadline_ms: u64,
    /// Fuel. Default 1,000,000,000.
    pub fuel: u64,
    /// Linear memory. Default 64 MiB.
    pub memory_bytes: u64,
    /// Result size. Default 1 MiB.
    pub output_bytes: u64,
}

impl Default for ToolLimits {
    fn default() -> ToolLimits {
        ToolLimits {
            deadline_ms: 5_000,
            fuel: 1_000_000_000,
            memory_bytes: 64 << 20,
            output_bytes: 1 << 20,
        }
    }
}

/// `[toolsmith.capabilities."domain:*"]` (or `"domain:action"`): what
/// the operator says about generated tools for those capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CapabilityRule {
    /// Their category (overrides `[toolsmith] category`).
    #[serde(default)]
    pub category: Option<String>,
    /// Their action type (default: `domain:action` itself).
    #[serde(default)]
    pub action_type: Option<String>,
}

/// What derivation reads, all of it from the operator.
#[derive(Clone, Copy)]
pub struct DeriveFrom<'a> {
    pub sandbox: &'a Sandbox,
    /// `[toolsmith] category`: the category when no capability rule sets one.
    pub category: Option<&'a str>,
    pub capabilities: &'a BTreeMap<String, CapabilityRule>,
    /// Whether an action type exists in the taxonomy (built-in or
    /// registered in `[policy] action-types`).
    pub known_action: &'a dyn Fn(&str) -> bool,
    /// Whether a category exists.
    pub known_category: &'a dyn Fn(&str) -> bool,
}

impl std::fmt::Debug for DeriveFrom<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeriveFrom")
            .field("sandbox", &self.sandbox)
            .field("category", &self.category)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

/// The safety facts of a generated tool, all of them host-derived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Derived {
    /// `gen_{domain}_{action}`.
    pub name: String,
    /// `domain:action`.
    pub capability: String,
    pub category: String,
    pub action_type: String,
    pub grants: Sandbox,
    pub side_effect: bool,
}

impl Sandbox {
    /// Checks every entry; `Err` names the key and what is wrong.
    pub fn check(&self) -> Result<(), (String, String)> {
        for (i, fs) in self.fs.iter().enumerate() {
            let bad = fs.path.is_empty()
                || fs.path.split(['/', '\\']).any(|p| p == "..")
                || fs.path.chars().any(char::is_control);
            if bad {
                return Err((
                    format!("toolsmith.sandbox.fs[{i}].path"),
                    "must be a non-empty path without `..` or control characters".into(),
                ));
            }
        }
        if let Network::Allow(hosts) = &self.network {
            for (i, entry) in hosts.iter().enumerate() {
                let ok = entry.rsplit_once(':').is_some_and(|(host, port)| {
                    !host.is_empty()
                        && host
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
                        && port.parse::<u16>().is_ok_and(|p| p > 0)
                });
                if !ok {
                    return Err((
                        format!("toolsmith.sandbox.network.allow[{i}]"),
                        format!("`{entry}` must be `host:port` (no wildcards)"),
                    ));
                }
            }
        }
        let l = &self.limits;
        if l.deadline_ms == 0 || l.fuel == 0 || l.memory_bytes == 0 || l.output_bytes == 0 {
            return Err((
                "toolsmith.sandbox.limits".into(),
                "every limit must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Whether a tool with these grants can change anything outside
    /// itself: a writable directory or any network.
    pub fn side_effect(&self) -> bool {
        self.fs.iter().any(|f| f.mode == FsMode::Rw) || self.network != Network::None
    }

    /// The canonical text the approval's grants digest covers.
    pub fn canonical(&self) -> String {
        serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    /// The grants as a person reads them in the approval prompt.
    pub fn in_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        if self.fs.is_empty() {
            words.push("opens no files or directories".to_owned());
        }
        for f in &self.fs {
            words.push(match f.mode {
                FsMode::Ro => format!("reads files under `{}`", f.path),
                FsMode::Rw => format!("reads, writes and deletes files under `{}`", f.path),
            });
        }
        match &self.network {
            Network::None => words.push("has no network access".to_owned()),
            Network::Allow(hosts) => {
                words.push(format!("connects to {}", hosts.join(", ")));
            }
        }
        let l = &self.limits;
        words.push(format!(
            "each call stops after {} ms, {} fuel, {} bytes of memory, {} bytes of output",
            l.deadline_ms, l.fuel, l.memory_bytes, l.output_bytes
        ));
        words
    }
}

/// Derives every safety fact of `blueprint` from the operator's config.
pub fn derive(blueprint: &Blueprint, from: &DeriveFrom<'_>) -> Result<Derived, BlueprintError> {
    let sig = blueprint.signature()?;
    let capability = sig.to_string();
    let refused = |reason: String| BlueprintError::Derive { reason };
    let exact = from.capabilities.get(&capability);
    let by_domain = from.capabilities.get(&format!("{}:*", sig.domain()));
    let rule = |pick: fn(&CapabilityRule) -> Option<&String>| {
        exact
            .and_then(pick)
            .or_else(|| by_domain.and_then(pick))
            .cloned()
    };
    let category = rule(|r| r.category.as_ref())
        .or_else(|| from.category.map(str::to_owned))
        .ok_or_else(|| {
            refused(format!(
                "no category for `{capability}`: the operator sets `[toolsmith] category` or \
                 `[toolsmith.capabilities.\"{}:*\"] category`",
                sig.domain()
            ))
        })?;
    if !(from.known_category)(&category) {
        return Err(refused(format!("`{category}` is not a category")));
    }
    let action_type = rule(|r| r.action_type.as_ref()).unwrap_or_else(|| capability.clone());
    if !(from.known_action)(&action_type) {
        return Err(refused(format!(
            "the action type `{action_type}` is not in the taxonomy: the operator registers it in \
             `[policy] action-types` or maps the capability in `[toolsmith.capabilities]`"
        )));
    }
    if action_type == "tool:create" {
        return Err(refused(
            "a generated tool may not itself create tools (`tool:create`)".into(),
        ));
    }
    Ok(Derived {
        name: sig.tool_name(),
        capability,
        category,
        action_type,
        grants: from.sandbox.clone(),
        side_effect: from.sandbox.side_effect(),
    })
}
