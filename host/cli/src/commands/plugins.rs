//! `warden plugin install|remove|list`: against a running server through
//! its admin API when one answers (so it swaps the plugins in at once),
//! else against the state directory.

use crate::out::out;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use warden_api::PluginAdmin as _;
use warden_mcp::AdminClient;
use warden_server::OfflinePlugins;

use super::guardrail::GuardrailArgs;
use super::setup::{self, HostArgs};
use crate::Outcome;

#[derive(Debug, Args)]
pub struct Target {
    /// A running server's HTTP admin API, e.g. http://127.0.0.1:7878
    /// (default: its admin socket in the state directory, if it answers).
    #[arg(long, value_name = "URL", requires = "token")]
    pub url: Option<String>,
    /// An admin token for --url.
    #[arg(long, env = "WARDEN_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[command(flatten)]
    pub host: HostArgs,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// A component file (its signature at FILE.sig) or a directory of them.
    pub source: PathBuf,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The plugin's name.
    pub name: String,
    /// A removal needs --actor, --confirm and --reason (audited).
    #[command(flatten)]
    pub guardrail: GuardrailArgs,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: Target,
}

/// The running server to talk to, if any.
pub(crate) async fn server(target: &Target) -> anyhow::Result<Option<AdminClient>> {
    if let (Some(url), Some(token)) = (&target.url, &target.token) {
        return Ok(Some(AdminClient::Http {
            base: url.clone(),
            token: token.clone(),
        }));
    }
    let config = target.host.config()?;
    let socket = target.host.state_dir(&config).join("admin.sock");
    let answers = tokio::net::UnixStream::connect(&socket).await.is_ok();
    Ok(answers.then_some(AdminClient::Socket(socket)))
}

fn offline(target: &Target) -> anyhow::Result<OfflinePlugins> {
    Ok(OfflinePlugins::open(
        &target.host.options(target.host.config()?)?,
    )?)
}

fn print(value: &Value) {
    out!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

pub fn install(args: InstallArgs) -> anyhow::Result<Outcome> {
    setup::tokio()?.block_on(async {
        let source = args
            .source
            .canonicalize()
            .with_context(|| format!("{}: cannot resolve", args.source.display()))?;
        let value = match server(&args.target).await? {
            Some(client) => client.install(&source).await?,
            None => offline(&args.target)?.install(source).await?,
        };
        print(&value);
        Ok(Outcome::Ok)
    })
}

pub fn remove(args: RemoveArgs) -> anyhow::Result<Outcome> {
    let operation = format!("removing plugin `{}`", args.name);
    let by = args.guardrail.check(&operation)?;
    setup::tokio()?.block_on(async {
        let value = match server(&args.target).await? {
            Some(client) => {
                client
                    .remove(&args.name, &args.guardrail.guardrail())
                    .await?
            }
            None => offline(&args.target)?.remove(args.name.clone(), by).await?,
        };
        print(&value);
        Ok(Outcome::Ok)
    })
}

pub fn list(args: ListArgs) -> anyhow::Result<Outcome> {
    setup::tokio()?.block_on(async {
        let value = match server(&args.target).await? {
            Some(client) => client.plugins().await?,
            None => offline(&args.target)?.list().await?,
        };
        if args.json {
            print(&value);
        } else {
            table(&value);
        }
        Ok(Outcome::Ok)
    })
}

fn table(value: &Value) {
    if value["insecure_allow_unsigned"].as_bool() == Some(true) {
        out!("WARNING: insecure-allow-unsigned is set: unsigned plugins are admitted");
    }
    let empty = Vec::new();
    let installed = value["installed"].as_array().unwrap_or(&empty);
    if installed.is_empty() {
        out!("no plugins installed");
    }
    for p in installed {
        let signer = match (p["publisher"].as_str(), p["key-id"].as_str()) {
            (Some(name), Some(id)) => format!("signed by {name} ({id})"),
            _ => "UNSIGNED".to_owned(),
        };
        let tools: Vec<&str> = p["tools"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(Value::as_str)
            .collect();
        out!(
            "{} {}  {}  {}  tools: {}",
            p["name"].as_str().unwrap_or("?"),
            p["version"].as_str().unwrap_or("?"),
            p["digest"].as_str().unwrap_or("?"),
            signer,
            tools.join(", ")
        );
    }
    if let Some(loaded) = value["loaded"].as_array() {
        let names: Vec<&str> = loaded.iter().filter_map(Value::as_str).collect();
        out!("loaded in the running server: {}", names.join(", "));
    }
}
