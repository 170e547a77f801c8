//! `warden plugin inspect`: what a component declares, without running it.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::json;

use crate::Outcome;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The component file.
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: InspectArgs) -> anyhow::Result<Outcome> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let inspection = warden_runtime::inspect(&bytes)
        .map_err(|reason| anyhow::anyhow!("{}: {reason}", args.file.display()))?;
    let text = if args.json {
        serde_json::to_string_pretty(&json!({
            "file": args.file,
            "digest": inspection.digest,
            "size": inspection.size,
            "manifest": inspection.manifest,
        }))?
    } else {
        render(&inspection)?
    };
    #[expect(
        clippy::print_stdout,
        reason = "the inspection is this command's output"
    )]
    {
        println!("{text}");
    }
    Ok(Outcome::Ok)
}

fn render(i: &warden_runtime::Inspection) -> anyhow::Result<String> {
    let m = &i.manifest;
    let mut out = String::new();
    writeln!(out, "plugin   {} {}", m.plugin.name, m.plugin.version)?;
    writeln!(out, "contract {}", m.wit)?;
    writeln!(out, "digest   {}", i.digest)?;
    writeln!(out, "size     {} bytes", i.size)?;
    writeln!(
        out,
        "requests filesystem: {}",
        m.capabilities.filesystem.as_str()
    )?;
    writeln!(out, "tools")?;
    for t in &m.tools {
        let effect = if t.side_effect {
            "side effects"
        } else {
            "read-only"
        };
        writeln!(
            out,
            "  {}  [{}, {}, {}]",
            t.name, t.category, t.action_type, effect
        )?;
        writeln!(out, "    {}", t.summary)?;
        if let Some(s) = &t.specifier_template {
            writeln!(out, "    specifier: {s}")?;
        }
        writeln!(out, "    params: {}", t.params_schema)?;
        writeln!(out, "    result: {}", t.result_schema)?;
        for e in &t.examples {
            writeln!(out, "    example: {} -> {}", e.description, e.args)?;
        }
        for r in &t.resources {
            writeln!(out, "    resource: {r}")?;
        }
    }
    Ok(out.trim_end().to_owned())
}
