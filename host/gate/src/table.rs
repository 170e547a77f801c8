//! The table of tools: which backend serves each name, under which grants,
//! registered by whom.
//!
//! A table is immutable; a change builds a new one and the gate swaps it
//! in whole. A call takes the table current when it starts and keeps its
//! entry (and so its backend) to the end, so a replaced plugin's in-flight
//! calls finish on the old version, new calls use the new one, and no call
//! sees part of each.

use std::collections::BTreeMap;
use std::sync::Arc;

use warden_api::{Backend, Grants, ToolName, ToolSpec};
use warden_policy::Verdict;

use crate::{ArgsValidator, GateError};

pub(crate) struct Entry {
    pub spec: ToolSpec,
    pub validator: ArgsValidator,
    pub backend: Arc<dyn Backend>,
    pub grants: Grants,
    /// The key a later replacement or removal names (a plugin's name).
    pub owner: String,
    /// A description for conflict messages (name and file).
    pub source: String,
    /// The strictest decision for a call no rule or grant decided.
    pub ceiling: Option<Verdict>,
    /// A toolsmith-made tool (the dynamic layer).
    pub generated: bool,
}

/// What replaced which tools, for logs and change notices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableChange {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub replaced: Vec<String>,
}

impl TableChange {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.replaced.is_empty()
    }
}

/// A backend waiting to be registered.
#[derive(Clone)]
pub struct Registration {
    pub owner: String,
    pub source: String,
    pub backend: Arc<dyn Backend>,
    pub grants: Grants,
    /// The most a call of these tools gets when no rule or grant decided
    /// it (a bridged server's `default-decision`): `Ask` turns what the
    /// mode or a read-only tool would allow into an ask, `Deny` denies
    /// it. `None`: the policy's decision stands.
    pub ceiling: Option<Verdict>,
    /// A toolsmith-made tool: the dynamic layer, which never shadows or
    /// blocks a static tool. A static tool registered under a generated
    /// tool's name takes the name, and the generated tool leaves the
    /// table (reported as removed); a generated tool under a name any
    /// tool has is refused.
    pub generated: bool,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("owner", &self.owner)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Default)]
pub(crate) struct Table {
    pub tools: BTreeMap<ToolName, Arc<Entry>>,
    /// Every registered backend by owner, also one serving no tool now
    /// (whose withheld tools still get their own refusal).
    pub backends: BTreeMap<String, Arc<dyn Backend>>,
}

impl Table {
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        let name: ToolName = name.parse().ok()?;
        self.tools.get(&name)
    }

    /// Why a backend of this table withholds `name` (see
    /// [`Backend::withheld`]), if one does.
    pub fn withheld(&self, name: &str) -> Option<warden_api::Envelope> {
        let name = name.trim().to_ascii_lowercase();
        self.backends.values().find_map(|b| b.withheld(&name))
    }

    /// The owner of the tool `name`, when the table has it.
    pub fn owner_of(&self, name: &str) -> Option<&str> {
        self.get(name).map(|e| e.owner.as_str())
    }

    /// This table with `owner`'s tools removed and `new` (if any) added.
    /// Fails, changing nothing, when a new tool clashes with another
    /// owner's or has an unusable schema.
    pub fn replace(
        &self,
        owner: &str,
        new: Option<Registration>,
    ) -> Result<(Table, TableChange), GateError> {
        let mut tools = self.tools.clone();
        let before: Vec<ToolName> = tools
            .iter()
            .filter(|(_, e)| e.owner == owner)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &before {
            tools.remove(name);
        }
        let mut change = TableChange::default();
        let mut backends = self.backends.clone();
        backends.remove(owner);
        if let Some(reg) = new {
            backends.insert(owner.to_owned(), reg.backend.clone());
            for spec in reg.backend.tools() {
                // Static first: a generated tool in the way steps aside.
                if !reg.generated
                    && let Some(existing) = tools.get(&spec.name)
                    && existing.generated
                {
                    let evicted = existing.owner.clone();
                    tracing::warn!(
                        tool = %spec.name, generated = %evicted, by = %reg.source,
                        "a static tool takes the name of a generated tool, which leaves the table"
                    );
                    tools.retain(|_, e| e.owner != evicted);
                    backends.remove(&evicted);
                    change.removed.push(spec.name.to_string());
                }
                if let Some(existing) = tools.get(&spec.name) {
                    return Err(GateError::DuplicateTool {
                        tool: spec.name.to_string(),
                        first: existing.source.clone(),
                        second: reg.source.clone(),
                    });
                }
                let validator = ArgsValidator::new(&spec)?;
                let name = spec.name.clone();
                if before.contains(&name) {
                    change.replaced.push(name.to_string());
                } else {
                    change.added.push(name.to_string());
                }
                tools.insert(
                    name,
                    Arc::new(Entry {
                        spec,
                        validator,
                        backend: reg.backend.clone(),
                        grants: reg.grants.clone(),
                        owner: reg.owner.clone(),
                        source: reg.source.clone(),
                        ceiling: reg.ceiling,
                        generated: reg.generated,
                    }),
                );
            }
        }
        change.removed.extend(
            before
                .iter()
                .filter(|n| !tools.contains_key(*n))
                .map(ToString::to_string),
        );
        Ok((Table { tools, backends }, change))
    }
}
