//! `warden config schema|check`.

use crate::out::out;
use std::path::Path;

use warden_server::{AgentOverrides, Config};

use crate::Outcome;

pub fn schema() -> anyhow::Result<Outcome> {
    {
        out!(
            "{}",
            serde_json::to_string_pretty(&warden_server::config::schema())?
        );
    }
    Ok(Outcome::Ok)
}

/// Parses and compiles a configuration; says what it spells the old way.
pub fn check(file: &Path) -> anyhow::Result<Outcome> {
    let config = Config::load(file)?;
    let agents = warden_server::agents(
        &config,
        &AgentOverrides::acting(super::setup::DEFAULT_AGENT),
        super::setup::DEFAULT_AGENT,
    )?;
    config.capability_grants.bounds()?;
    config.toolsmith.check()?;
    if let Some(sandbox) = &config.sandbox {
        sandbox.validate()?;
    }
    // Every bridge is checked (secrets resolved) without starting any;
    // the instance only labels containers, and none is started here.
    let bridges =
        warden_server::bridges::plan_all(&config.bridges, &config.secrets, "config-check")?;
    config
        .progressive_trust
        .validate()
        .map_err(anyhow::Error::msg)?;
    {
        for deprecation in config.deprecations() {
            out!("warning: {deprecation}");
        }
        out!(
            "{}: ok ({} plugins, {} bridged servers, {} agents: {})",
            file.display(),
            config.plugins.len(),
            bridges.len(),
            agents.len(),
            agents
                .iter()
                .map(|a| a.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(Outcome::Ok)
}
