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
}

impl Table {
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        let name: ToolName = name.parse().ok()?;
        self.tools.get(&name)
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
        if let Some(reg) = new {
            for spec in reg.backend.tools() {
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
                    }),
                );
            }
        }
        change.removed = before
            .iter()
            .filter(|n| !tools.contains_key(*n))
            .map(ToString::to_string)
            .collect();
        Ok((Table { tools }, change))
    }
}
