//! Progressive disclosure (reference 000, "Progressive Tool Disclosure").
//! Above a number of tools, an agent's tools/list carries three discovery
//! tools instead of every definition: `list_tools` (L1: name, summary,
//! category, cost tier, within a token budget), `load_tool` (L2: the full
//! definition, which also adds the tool to the agent's list) and
//! `load_tool_resource` (L3: a document). Loaded definitions past the L2
//! budget are unloaded oldest first. Every change of an agent's visible
//! set is announced with tools/list_changed.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use estimate::token_estimate;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use warden_api::ToolSpec;

/// When disclosure applies.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum DisclosureMode {
    /// Every agent sees every permitted tool's full definition.
    Off,
    /// Always progressive.
    On,
    /// Progressive when an agent may use more than `threshold` tools.
    #[default]
    Auto,
}

/// Settings (the `[serve.disclosure]` table of `warden.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct DisclosureConfig {
    pub mode: DisclosureMode,
    /// `auto` turns disclosure on above this many tools.
    pub threshold: usize,
    /// Most tokens `list_tools` spends on L1 entries (the rest is paged).
    pub l1_token_budget: usize,
    /// Most tokens of L2 definitions loaded at once per agent.
    pub l2_token_budget: usize,
}

impl Default for DisclosureConfig {
    fn default() -> Self {
        DisclosureConfig {
            mode: DisclosureMode::Auto,
            threshold: 30,
            l1_token_budget: 3000,
            l2_token_budget: 15000,
        }
    }
}

/// The names of the discovery tools.
pub(crate) const LIST: &str = "list_tools";
pub(crate) const LOAD: &str = "load_tool";
pub(crate) const RESOURCE: &str = "load_tool_resource";

mod estimate {
    /// A rough token count (about four bytes per token), enough to keep
    /// budgets; no tokenizer is exact across models.
    pub fn token_estimate(text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

/// What `load_tool` did to the agent's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loaded {
    pub body: Value,
    /// True when the visible set changed (the tool was not loaded yet, or
    /// others were unloaded).
    pub changed: bool,
    pub unloaded: Vec<String>,
}

/// Loaded tools per agent, oldest first, with their L2 token cost.
#[derive(Debug)]
pub struct Disclosure {
    config: DisclosureConfig,
    loaded: Mutex<BTreeMap<String, VecDeque<(String, usize)>>>,
}

/// The cost tier of a tool, from its category: cheap local work, moderate
/// (process or network), expensive (containers, browsers, desktops).
fn cost_tier(spec: &ToolSpec) -> &'static str {
    match spec.category.as_str() {
        "file-system" | "memory" | "analytics" | "design" => "low",
        "browser" | "desktop" | "code-execution" | "deployment" => "high",
        _ => "medium",
    }
}

/// The L2 body of a tool: its whole definition as agents use it.
pub(crate) fn body(spec: &ToolSpec) -> Value {
    json!({
        "name": spec.name.as_str(),
        "summary": spec.summary,
        "description": spec.description,
        "category": spec.category.as_str(),
        "action_type": spec.action_type.as_str(),
        "side_effect": spec.side_effect,
        "input_schema": spec.params_schema,
        "output_schema": spec.result_schema,
        "examples": spec.examples,
        "resources": spec.resources,
        "failure_modes": failure_modes(spec),
    })
}

/// How a call of this tool can fail, in the terms of the envelope.
fn failure_modes(spec: &ToolSpec) -> Vec<String> {
    let mut modes = vec![
        "argument_validation_error: arguments do not match input_schema (the message names the field)".to_owned(),
        "permission_denied: the policy denied or is asking a person (domain_code says which; approval_pending carries an approval id — retry after it is answered)".to_owned(),
        "limit_exceeded: deadline, memory or output limit (domain_code says which)".to_owned(),
        "tool_error: the tool reported a failure (domain_code is the tool's code)".to_owned(),
    ];
    if spec.category.as_str() == "file-system" {
        modes.push(
            "tool_error/outside_grant: a path outside the directories granted to the tool"
                .to_owned(),
        );
    }
    modes
}

impl Disclosure {
    pub fn new(config: DisclosureConfig) -> Disclosure {
        Disclosure {
            config,
            loaded: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, VecDeque<(String, usize)>>> {
        self.loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether an agent with `tools` permitted tools gets discovery tools.
    pub fn active(&self, tools: usize) -> bool {
        match self.config.mode {
            DisclosureMode::Off => false,
            DisclosureMode::On => true,
            DisclosureMode::Auto => tools > self.config.threshold,
        }
    }

    /// The permitted tools an agent has loaded, in load order.
    pub(crate) fn loaded<'a>(&self, agent: &str, permitted: &'a [ToolSpec]) -> Vec<&'a ToolSpec> {
        let loaded = self.lock();
        let Some(list) = loaded.get(agent) else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|(name, _)| permitted.iter().find(|s| s.name.as_str() == name))
            .collect()
    }

    /// L1 entries from `offset`, as many as fit the budget; `next_offset`
    /// says where the next page starts.
    pub(crate) fn list(&self, permitted: &[ToolSpec], offset: usize) -> Value {
        let mut spent = 0;
        let mut entries = Vec::new();
        let mut next = None;
        for (i, spec) in permitted.iter().enumerate().skip(offset) {
            let entry = json!({
                "name": spec.name.as_str(),
                "summary": spec.summary,
                "category": spec.category.as_str(),
                "cost_tier": cost_tier(spec),
            });
            let cost = token_estimate(&entry.to_string());
            if spent + cost > self.config.l1_token_budget && !entries.is_empty() {
                next = Some(i);
                break;
            }
            spent += cost;
            entries.push(entry);
        }
        json!({
            "tools": entries,
            "total": permitted.len(),
            "next_offset": next,
            "hint": "call load_tool with a name to get its full definition; it then appears in your tool list",
        })
    }

    /// Loads a tool's L2 body for an agent, unloading the oldest loaded
    /// tools while the total is over the L2 budget (the one just loaded
    /// always stays).
    pub(crate) fn load(&self, agent: &str, spec: &ToolSpec) -> Loaded {
        let body = body(spec);
        let cost = token_estimate(&body.to_string());
        let name = spec.name.as_str().to_owned();
        let mut all = self.lock();
        let list = all.entry(agent.to_owned()).or_default();
        let mut changed = false;
        if let Some(at) = list.iter().position(|(n, _)| *n == name) {
            // Loading again refreshes its place in the queue.
            if let Some(entry) = list.remove(at) {
                list.push_back(entry);
            }
        } else {
            list.push_back((name, cost));
            changed = true;
        }
        let mut unloaded = Vec::new();
        while list.iter().map(|(_, c)| c).sum::<usize>() > self.config.l2_token_budget
            && list.len() > 1
        {
            if let Some((old, _)) = list.pop_front() {
                unloaded.push(old);
                changed = true;
            }
        }
        Loaded {
            body,
            changed,
            unloaded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description_len: usize) -> ToolSpec {
        serde_json::from_value(json!({
            "name": name,
            "summary": "a tool",
            "description": "x".repeat(description_len),
            "category": "file-system",
            "action-type": "code:read",
            "params-schema": {"type": "object"},
            "result-schema": {},
            "side-effect": false,
        }))
        .unwrap()
    }

    #[test]
    fn auto_turns_on_above_the_threshold() {
        let d = Disclosure::new(DisclosureConfig {
            threshold: 2,
            ..DisclosureConfig::default()
        });
        assert!(!d.active(2));
        assert!(d.active(3));
    }

    #[test]
    fn loads_past_the_budget_unload_the_oldest_first() {
        let d = Disclosure::new(DisclosureConfig {
            l2_token_budget: 700,
            ..DisclosureConfig::default()
        });
        let tools = [spec("t_a", 800), spec("t_b", 800), spec("t_c", 800)];
        assert!(d.load("ag", &tools[0]).changed);
        assert!(!d.load("ag", &tools[0]).changed);
        let third = d.load("ag", &tools[1]);
        assert_eq!(third.unloaded, vec!["t_a".to_owned()]);
        let names: Vec<_> = d
            .loaded("ag", &tools)
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["t_b"]);
        assert!(d.loaded("other", &tools).is_empty());
    }

    #[test]
    fn l1_pages_within_its_budget() {
        let d = Disclosure::new(DisclosureConfig {
            l1_token_budget: 60,
            ..DisclosureConfig::default()
        });
        let tools: Vec<_> = (0..10).map(|i| spec(&format!("t_n{i}"), 1)).collect();
        let page = d.list(&tools, 0);
        let shown = page["tools"].as_array().unwrap().len();
        assert!((1..10).contains(&shown), "{page}");
        assert_eq!(page["next_offset"], shown);
        let rest = d.list(&tools, shown);
        assert_eq!(rest["tools"][0]["name"], format!("t_n{shown}"));
    }
}
