//! The guardrail flags of destructive operator commands: `--actor`,
//! `--confirm`, `--reason` (see `warden_api::Guardrail`).

use clap::Args;
use warden_api::{Attribution, Guardrail};

#[derive(Debug, Clone, Args)]
pub struct GuardrailArgs {
    /// Who does this (audited). Default: $WARDEN_ACTOR, else the login name.
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    /// Confirm a destructive change explicitly.
    #[arg(long)]
    pub confirm: bool,
    /// Why (audited).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

impl GuardrailArgs {
    /// The actor: the flag, else `WARDEN_ACTOR`, else the login name.
    pub fn actor(&self) -> Option<String> {
        self.actor.clone().or_else(|| {
            ["WARDEN_ACTOR", "USER", "LOGNAME"]
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        })
    }

    pub fn guardrail(&self) -> Guardrail {
        Guardrail {
            actor: self.actor(),
            confirm: self.confirm,
            reason: self.reason.clone(),
        }
    }

    /// The checked guardrail of `operation`, or an error naming what is
    /// missing.
    pub fn check(&self, operation: &str) -> anyhow::Result<Attribution> {
        Ok(self.guardrail().check(operation)?)
    }
}
