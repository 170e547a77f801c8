//! Wiring shared by commands: runtime options, loading plugins, the gate.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use warden_api::{CallLimits, Grants};
use warden_gate::Gate;
use warden_runtime::{Plugin, Runtime, RuntimeConfig};

/// Options every command that runs plugins takes.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// A plugin component to load (repeatable).
    #[arg(long = "plugin", value_name = "FILE", required = true)]
    pub plugins: Vec<PathBuf>,
    /// Where Warden keeps state; compiled components are cached in its `cache/`.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".warden",
        env = "WARDEN_STATE_DIR"
    )]
    pub state_dir: PathBuf,
    /// Compile every plugin from scratch and cache nothing.
    #[arg(long)]
    pub no_cache: bool,
    /// Wall-clock deadline of a call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = CallLimits::DEFAULT.deadline.as_millis() as u64)]
    pub timeout_ms: u64,
    /// Memory limit of a call, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = CallLimits::DEFAULT.memory_bytes >> 20)]
    pub memory_mb: u64,
    /// Largest result a call may return, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = CallLimits::DEFAULT.output_bytes)]
    pub max_output_bytes: u64,
}

impl HostArgs {
    pub fn limits(&self) -> CallLimits {
        CallLimits {
            deadline: Duration::from_millis(self.timeout_ms),
            memory_bytes: self.memory_mb << 20,
            output_bytes: self.max_output_bytes,
            ..CallLimits::DEFAULT
        }
    }

    pub fn runtime(&self) -> anyhow::Result<Runtime> {
        let cache = (!self.no_cache).then(|| self.state_dir.join("cache"));
        let mut config = RuntimeConfig::new(cache);
        config.max_memory_bytes = config.max_memory_bytes.max(self.memory_mb << 20);
        Ok(Runtime::new(config)?)
    }

    /// Loads every plugin (any failure names the file and stops).
    pub async fn load(&self, runtime: &Runtime) -> anyhow::Result<Vec<Plugin>> {
        let mut plugins = Vec::new();
        for path in &self.plugins {
            let plugin = runtime
                .load(path)
                .await
                .with_context(|| format!("loading {}", path.display()))?;
            plugins.push(plugin);
        }
        Ok(plugins)
    }

    /// A gate over the plugins, with these grants and limits.
    pub fn gate(&self, plugins: &[Plugin], grants: Grants) -> anyhow::Result<Gate> {
        let mut builder = Gate::builder().grants(grants).limits(self.limits());
        for plugin in plugins {
            let source = format!("{} ({})", plugin.name(), plugin.path().display());
            builder = builder.backend(&source, Arc::new(plugin.clone()))?;
        }
        Ok(builder.build())
    }
}

pub fn tokio() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
