//! `warden config schema|check`.

use std::path::Path;

use crate::Outcome;
use crate::config::{Config, schema as config_schema};

pub fn schema() -> anyhow::Result<Outcome> {
    #[expect(clippy::print_stdout, reason = "the schema is this command's output")]
    {
        println!("{}", serde_json::to_string_pretty(&config_schema())?);
    }
    Ok(Outcome::Ok)
}

pub fn check(file: &Path) -> anyhow::Result<Outcome> {
    let config = Config::load(file)?;
    let agents = super::setup::agents(&config, &default_agent())?;
    config.capability_grants.bounds()?;
    config
        .progressive_trust
        .validate()
        .map_err(anyhow::Error::msg)?;
    #[expect(clippy::print_stdout, reason = "the summary is this command's output")]
    {
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

fn default_agent() -> super::setup::AgentArgs {
    super::setup::AgentArgs {
        agent: super::setup::DEFAULT_AGENT.into(),
        mode: None,
        allow: Vec::new(),
        ask: Vec::new(),
        deny: Vec::new(),
    }
}
