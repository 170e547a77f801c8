//! The options commands share, parsed into the server library's types.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use warden_policy::Mode;
use warden_server::{AgentOverrides, Config, HostOptions, LimitOverrides, Loaded};

/// The agent commands act as when none is named.
pub const DEFAULT_AGENT: &str = "cli";

/// Options every command that runs plugins takes.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// A warden.toml: plugins, grants, agents, rules.
    #[arg(long, value_name = "FILE", env = "WARDEN_CONFIG")]
    pub config: Option<PathBuf>,
    /// A plugin component to load (repeatable; adds to the config's).
    #[arg(long = "plugin", value_name = "FILE")]
    pub plugins: Vec<PathBuf>,
    /// Grant a directory to the --plugin components: HOST_DIR[:GUEST_DIR][:ro|rw]
    /// (repeatable; read-only by default; the guest sees HOST_DIR at its own
    /// path unless GUEST_DIR is given).
    #[arg(long = "grant-fs", value_name = "SPEC")]
    pub grant_fs: Vec<String>,
    /// Grant network access to the --plugin components (repeatable):
    /// `host[:port]`, `*.domain`, `https://host`, an IP or CIDR, or
    /// `insecure:allow-all`. Loopback and private addresses need a grant
    /// naming the address.
    #[arg(long = "grant-net", value_name = "PATTERN")]
    pub grant_net: Vec<String>,
    /// Grant an environment variable to the --plugin components
    /// (repeatable): `KEY` passes the host's value, `KEY=VALUE` this value.
    #[arg(long = "grant-env", value_name = "KEY[=VALUE]")]
    pub grant_env: Vec<String>,
    #[command(flatten)]
    pub signers: SignersArg,
    /// Where Warden keeps state; compiled components are cached in its `cache/`.
    #[arg(long, value_name = "DIR", env = "WARDEN_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Compile every plugin from scratch and cache nothing.
    #[arg(long)]
    pub no_cache: bool,
    /// Without `--state-dir` or a config's `state-dir`: use the per-user
    /// state directory instead of `./.warden` (`warden call`, whose grants
    /// often name the working directory).
    #[arg(skip)]
    pub per_user_state: bool,
    /// Wall-clock deadline of a call, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Memory limit of a call, in MiB.
    #[arg(long, value_name = "MIB")]
    pub memory_mb: Option<u64>,
    /// Largest result a call may return, in bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_output_bytes: Option<u64>,
}

/// `--signers FILE` (and its old spelling `--trust`).
#[derive(Debug, Clone, Args)]
pub struct SignersArg {
    /// A signers file (the keys of `[signers]`: publishers, revocations)
    /// or a publisher's public key file, added to the config's signers.
    #[arg(long, value_name = "FILE", env = "WARDEN_SIGNERS")]
    pub signers: Option<PathBuf>,
    /// The older name of --signers.
    #[arg(long, value_name = "FILE", env = "WARDEN_TRUST", hide = true)]
    pub trust: Option<PathBuf>,
}

impl SignersArg {
    /// The signers file, warning when it came by the old name.
    pub fn file(&self) -> anyhow::Result<Option<PathBuf>> {
        match (&self.signers, &self.trust) {
            (Some(_), Some(_)) => anyhow::bail!(
                "both --signers (WARDEN_SIGNERS) and its old name --trust (WARDEN_TRUST) are set; \
                 keep --signers"
            ),
            (Some(file), None) => Ok(Some(file.clone())),
            (None, Some(file)) => {
                warn_renamed("--trust (WARDEN_TRUST)", "--signers (WARDEN_SIGNERS)");
                Ok(Some(file.clone()))
            }
            (None, None) => Ok(None),
        }
    }
}

/// Says, once per run, that an option was renamed.
pub fn warn_renamed(old: &str, new: &str) {
    #[expect(clippy::print_stderr, reason = "a deprecation the user must see")]
    {
        eprintln!(
            "warden: warning: {old} is deprecated and will be removed after the next release; use {new}"
        );
    }
}

/// Options that shape the agent a command acts as.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The agent to act as. Without a config, `cli` is a standard-level
    /// agent in default mode.
    #[arg(long, default_value = DEFAULT_AGENT)]
    pub agent: String,
    /// Override the agent's mode: default, plan, accept-edits, autonomous.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Add an allow rule, e.g. 'fs_write(/src/**)' (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
    /// Add an ask rule (repeatable).
    #[arg(long = "ask", value_name = "RULE")]
    pub ask: Vec<String>,
    /// Add a deny rule (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,
}

impl AgentArgs {
    pub fn overrides(&self) -> AgentOverrides {
        for (flag, rules) in [
            ("--allow", &self.allow),
            ("--ask", &self.ask),
            ("--deny", &self.deny),
        ] {
            for rule in rules {
                if let Some(new) = warden_policy::renamed_rule(rule) {
                    warn_renamed(
                        &format!("{flag} '{}'", rule.trim()),
                        &format!("{flag} '{new}'"),
                    );
                }
            }
        }
        AgentOverrides {
            agent: self.agent.clone(),
            mode: self.mode,
            allow: self.allow.clone(),
            ask: self.ask.clone(),
            deny: self.deny.clone(),
        }
    }
}

pub fn parse_mode(s: &str) -> Result<Mode, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|_| {
        format!("unknown mode `{s}`: expected default, plan, accept-edits or autonomous")
    })
}

impl HostArgs {
    /// The named config, or the defaults.
    pub fn config(&self) -> anyhow::Result<Config> {
        Ok(match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        })
    }

    /// The state directory for `config`: the flag, else the config's,
    /// else the per-user one (when asked for) or `.warden`.
    pub fn state_dir(&self, config: &Config) -> PathBuf {
        warden_server::state_dir(self.state_dir.as_deref(), config, self.per_user_state)
    }

    /// The host options for `config` with this command line's additions.
    pub fn options(&self, config: Config) -> anyhow::Result<HostOptions> {
        let state_dir = self.state_dir(&config);
        Ok(HostOptions {
            state_dir,
            plugins: self.plugins.clone(),
            plugin_grants: warden_server::grants(
                "",
                &self.grant_fs,
                &self.grant_net,
                &self.grant_env,
            )?,
            signers: self.signers.file()?,
            no_cache: self.no_cache,
            limits: LimitOverrides {
                timeout_ms: self.timeout_ms,
                memory_mb: self.memory_mb,
                max_output_bytes: self.max_output_bytes,
            },
            clock: std::sync::Arc::new(warden_api::SystemClock),
            config,
        })
    }

    /// Loads the config and every plugin; having nothing to serve is an
    /// error here.
    pub async fn load(&self) -> anyhow::Result<Loaded> {
        let loaded = Loaded::load(&self.options(self.config()?)?).await?;
        if loaded.is_empty() {
            anyhow::bail!(
                "no plugins: pass --plugin FILE, list [[plugins]] or configure [sandbox] in a config"
            );
        }
        Ok(loaded)
    }
}

/// One thread for everything async: a host serving one stdio client,
/// where a call is read, decided, audited, run (bridged servers too) and
/// answered without waking another thread. On a multi-threaded runtime
/// each call also woke an idle worker that found nothing to do: about a
/// fifth of a served call's CPU on two cores. Blocking work (compiling
/// plugins) still goes to the blocking pool, on every core.
pub fn tokio_single() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

pub fn tokio() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
