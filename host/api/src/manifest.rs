use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::net::NetPattern;
use crate::{FsAccess, Grants, SpecError, ToolSpec, check_env_key};

/// The custom section of a plugin component that holds its [`Manifest`]
/// as JSON. The host reads it without running guest code.
pub const MANIFEST_SECTION: &str = "warden:manifest";
/// The manifest format this host reads.
pub const MANIFEST_VERSION: u32 = 1;
/// The WIT package plugins are built against.
pub const WIT_PACKAGE: &str = "warden:tool@0.1.0";

/// A plugin's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PluginId {
    pub name: String,
    pub version: String,
}

/// What a plugin asks for. The effective grant of a call is the
/// intersection of this, the operator's grant and the agent's level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RequestedCapabilities {
    /// The most filesystem access any directory grant may give the plugin.
    pub filesystem: FsAccess,
    /// Hosts the plugin may want to reach (network patterns); the
    /// operator's grant is met with these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<NetPattern>,
    /// Environment variables the plugin may want to read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// Where a plugin's request and the operator's grant differ. Not an error:
/// the plugin loads and gets the intersection; this is what `warden plugin
/// inspect` shows and the host logs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct CapabilityGap {
    /// Requested hosts no grant covers: calls cannot reach them.
    pub network_not_granted: Vec<NetPattern>,
    /// Granted patterns the plugin never asked for: they admit nothing.
    pub network_not_requested: Vec<NetPattern>,
    /// Requested variables not granted: invisible to calls.
    pub env_not_granted: Vec<String>,
    /// Granted variables the plugin never asked for: not passed on.
    pub env_not_requested: Vec<String>,
}

impl CapabilityGap {
    pub fn between(requested: &RequestedCapabilities, grants: &Grants) -> CapabilityGap {
        let overlaps = |a: &NetPattern, b: &[NetPattern]| b.iter().any(|x| x.meet(a).is_some());
        CapabilityGap {
            network_not_granted: requested
                .network
                .iter()
                .filter(|r| !grants.net.iter().any(|g| g.covers(r)))
                .cloned()
                .collect(),
            network_not_requested: grants
                .net
                .iter()
                .filter(|g| !overlaps(g, &requested.network))
                .cloned()
                .collect(),
            env_not_granted: requested
                .env
                .iter()
                .filter(|k| !grants.env.iter().any(|g| &g.key == *k))
                .cloned()
                .collect(),
            env_not_requested: grants
                .env
                .iter()
                .filter(|g| !requested.env.contains(&g.key))
                .map(|g| g.key.clone())
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.network_not_granted.is_empty()
            && self.network_not_requested.is_empty()
            && self.env_not_granted.is_empty()
            && self.env_not_requested.is_empty()
    }
}

/// What a plugin declares about itself, readable without running it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Manifest {
    pub manifest_version: u32,
    /// The WIT package the plugin was built against.
    pub wit: String,
    pub plugin: PluginId,
    pub capabilities: RequestedCapabilities,
    pub tools: Vec<ToolSpec>,
}

impl Manifest {
    /// Parses and checks a manifest: known version and WIT package, a
    /// well-formed plugin name, every tool valid, in the plugin's namespace
    /// and declared once.
    pub fn from_json(bytes: &[u8]) -> Result<Manifest, SpecError> {
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|e| SpecError::Manifest(e.to_string()))?;
        manifest.check()?;
        Ok(manifest)
    }

    /// See [`Manifest::from_json`].
    pub fn check(&self) -> Result<(), SpecError> {
        if self.manifest_version != MANIFEST_VERSION {
            return Err(SpecError::Manifest(format!(
                "manifest-version {} is not supported (this host reads {MANIFEST_VERSION})",
                self.manifest_version
            )));
        }
        if self.wit != WIT_PACKAGE {
            return Err(SpecError::Manifest(format!(
                "built against `{}`, this host speaks `{WIT_PACKAGE}`",
                self.wit
            )));
        }
        let name_ok = !self.plugin.name.is_empty()
            && self
                .plugin
                .name
                .starts_with(|c: char| c.is_ascii_lowercase())
            && self
                .plugin
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !name_ok {
            return Err(SpecError::Manifest(format!(
                "plugin name `{}` must be lower-case [a-z0-9_], starting with a letter",
                self.plugin.name
            )));
        }
        for key in &self.capabilities.env {
            check_env_key(key)?;
        }
        if self.tools.is_empty() {
            return Err(SpecError::Manifest("the plugin declares no tools".into()));
        }
        let mut seen = BTreeSet::new();
        for tool in &self.tools {
            if !tool.name.in_namespace(&self.plugin.name) {
                return Err(SpecError::ForeignNamespace {
                    tool: tool.name.to_string(),
                    plugin: self.plugin.name.clone(),
                });
            }
            if !seen.insert(tool.name.as_str()) {
                return Err(SpecError::DuplicateTool(tool.name.to_string()));
            }
            tool.check()?;
        }
        Ok(())
    }

    pub fn to_json(&self) -> String {
        // A Manifest holds only strings, numbers, bools and JSON values:
        // serialising it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}
