//! `warden plugin inspect`: what a component declares, without running it.

use crate::out::out;
use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::json;

use warden_api::{CapabilityGap, Grants};

use crate::Outcome;
use warden_server::Config;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The component file.
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Compare the plugin's requests with these network grants (repeatable).
    #[arg(long = "grant-net", value_name = "PATTERN")]
    pub grant_net: Vec<String>,
    /// Compare the plugin's requests with these environment grants
    /// (repeatable; `KEY` or `KEY=VALUE`).
    #[arg(long = "grant-env", value_name = "KEY[=VALUE]")]
    pub grant_env: Vec<String>,
    /// Compare with the grants of this plugin's entry in a warden.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The grants to compare with: the config entry for this file plus the
/// command line's, or `None` when nothing was given.
fn grants(args: &InspectArgs) -> anyhow::Result<Option<Grants>> {
    let mut grants = warden_server::grants("", &[], &args.grant_net, &args.grant_env)?;
    let mut given = !args.grant_net.is_empty() || !args.grant_env.is_empty();
    if let Some(path) = &args.config {
        let config = Config::load(path)?;
        let file = args.file.canonicalize().ok();
        for (i, p) in config.plugins.iter().enumerate() {
            if p.path.canonicalize().ok() == file {
                let at = format!("{}: at `plugins[{i}]`", path.display());
                let g = warden_server::grants(&at, &[], &p.grant_net, &p.grant_env)?;
                grants.net.extend(g.net);
                grants.env.extend(g.env);
                given = true;
            }
        }
    }
    Ok(given.then_some(grants))
}

pub fn run(args: InspectArgs) -> anyhow::Result<Outcome> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let inspection = warden_runtime::inspect(&bytes)
        .map_err(|reason| anyhow::anyhow!("{}: {reason}", args.file.display()))?;
    let gap = grants(&args)?.map(|g| CapabilityGap::between(&inspection.manifest.capabilities, &g));
    let text = if args.json {
        serde_json::to_string_pretty(&json!({
            "file": args.file,
            "digest": inspection.digest,
            "size": inspection.size,
            "manifest": inspection.manifest,
            "grant-gap": gap,
        }))?
    } else {
        render(&inspection, gap.as_ref())?
    };
    {
        out!("{text}");
    }
    Ok(Outcome::Ok)
}

fn render(i: &warden_runtime::Inspection, gap: Option<&CapabilityGap>) -> anyhow::Result<String> {
    let m = &i.manifest;
    let mut out = String::new();
    writeln!(out, "plugin   {} {}", m.plugin.name, m.plugin.version)?;
    writeln!(out, "contract {}", m.wit)?;
    writeln!(out, "digest   {}", i.digest)?;
    writeln!(out, "size     {} bytes", i.size)?;
    let caps = &m.capabilities;
    writeln!(out, "requests filesystem: {}", caps.filesystem.as_str())?;
    writeln!(out, "         network: {}", join(&caps.network))?;
    writeln!(out, "         env: {}", join(&caps.env))?;
    if let Some(gap) = gap {
        render_gap(&mut out, gap)?;
    }
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

fn join<T: ToString>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn render_gap(out: &mut String, gap: &CapabilityGap) -> anyhow::Result<()> {
    if gap.is_empty() {
        writeln!(out, "grants   match the requests")?;
        return Ok(());
    }
    writeln!(
        out,
        "grants   differ from the requests (calls get the intersection):"
    )?;
    let rows = [
        (
            "requested, not granted: network",
            join(&gap.network_not_granted),
        ),
        ("requested, not granted: env", join(&gap.env_not_granted)),
        (
            "granted, not requested: network",
            join(&gap.network_not_requested),
        ),
        ("granted, not requested: env", join(&gap.env_not_requested)),
    ];
    for (label, value) in rows {
        if value != "none" {
            writeln!(out, "  {label}: {value}")?;
        }
    }
    Ok(())
}
