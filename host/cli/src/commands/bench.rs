//! `warden bench`: end-to-end figures on this machine.

use clap::Args;

use crate::Outcome;

#[derive(Debug, Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> anyhow::Result<Outcome> {
    anyhow::bail!("not written yet")
}
