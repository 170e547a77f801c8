//! `warden config schema|check`.

use std::path::Path;

use warden_server::{AgentOverrides, Config};

use crate::Outcome;

pub fn schema() -> anyhow::Result<Outcome> {
    #[expect(clippy::print_stdout, reason = "the schema is this command's output")]
    {
        println!(
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
    config
        .progressive_trust
        .validate()
        .map_err(anyhow::Error::msg)?;
    #[expect(clippy::print_stdout, reason = "the summary is this command's output")]
    {
        for deprecation in config.deprecations() {
            println!("warning: {deprecation}");
        }
        println!(
            "{}: ok ({} plugins, {} agents: {})",
            file.display(),
            config.plugins.len(),
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
