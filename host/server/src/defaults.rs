//! Which configuration `warden serve` runs on: `--config FILE`, else
//! `./warden.toml` when present (and it does not widen trust: see
//! `found_config`), else the embedded defaults — the bundled plugins (from
//! `--plugin-dir`, `WARDEN_PLUGIN_DIR`, a development checkout's
//! `plugins/target/wasm32-wasip2/release`, `plugins/` beside the binary,
//! or `share/warden/plugins` under its prefix), `./workspace` granted read-write at `/workspace`, and the
//! development key that signed the bundled plugins trusted by name.

use std::path::{Path, PathBuf};

use crate::ServerError;
use crate::config::{Config, GrantsConfig, PluginConfig};
use crate::signers::{PublisherConfig, SignersConfig};

/// The development key's public half, written beside the bundled plugins
/// by `cargo xtask plugins`, which signs them with its secret half.
pub const DEV_KEY_FILE: &str = "warden-dev.pub";

/// The bundled plugins' directory: `flag` (`--plugin-dir`,
/// `WARDEN_PLUGIN_DIR`) when given, else the first of
/// [`bundled_candidates`] that exists.
pub fn bundled_dir(flag: Option<&Path>) -> Result<PathBuf, ServerError> {
    if let Some(dir) = flag {
        return Ok(dir.to_path_buf());
    }
    let exe = std::env::current_exe().ok();
    let candidates = bundled_candidates(exe.as_deref());
    if let Some(dir) = candidates.iter().find(|d| d.is_dir()) {
        return Ok(dir.clone());
    }
    let looked: Vec<String> = candidates
        .iter()
        .map(|d| format!("`{}`", d.display()))
        .collect();
    Err(ServerError::Usage(format!(
        "no bundled plugins found (looked in {}): install Warden with `cargo xtask install`, \
         build them with `cargo xtask plugins`, or pass --plugin-dir DIR, --plugin FILE or \
         --config FILE",
        looked.join(", ")
    )))
}

/// Where bundled plugins may be, in order: a development checkout's build
/// (`plugins/target/wasm32-wasip2/release`, from the working directory),
/// `plugins/` beside the binary, and `share/warden/plugins` under the
/// binary's prefix (`PREFIX/bin/warden`, as `cargo xtask install`
/// lays it out).
pub fn bundled_candidates(exe: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("plugins/target/wasm32-wasip2/release")];
    if let Some(bin) = exe.and_then(Path::parent) {
        dirs.push(bin.join("plugins"));
        if let Some(prefix) = bin.parent() {
            dirs.push(prefix.join("share/warden/plugins"));
        }
    }
    dirs
}

/// The embedded default configuration: the bundled plugins of
/// `plugin_dir` (none when `with_bundled` is false: the caller named its
/// own plugins), `./workspace` granted read-write at `/workspace`.
pub fn embedded(plugin_dir: Option<&Path>, with_bundled: bool) -> Result<Config, ServerError> {
    let dir = bundled_dir(plugin_dir)?;
    let workspace = PathBuf::from("workspace");
    std::fs::create_dir_all(&workspace).map_err(|e| ServerError::io("creating ./workspace", e))?;
    let workspace = workspace
        .canonicalize()
        .map_err(|e| ServerError::io("resolving ./workspace", e))?;
    let workspace_grant = format!("{}:/workspace:rw", workspace.display());
    let mut plugins = Vec::new();
    if with_bundled {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| ServerError::io(format!("reading {}", dir.display()), e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(ServerError::Usage(format!(
                "{} holds no .wasm plugins",
                dir.display()
            )));
        }
        for path in files {
            plugins.push(PluginConfig {
                path,
                grant_fs: vec![workspace_grant.clone()],
                // No network or environment by default: grant them in a config.
                grant_net: Vec::new(),
                grant_env: Vec::new(),
            });
        }
    }
    // The demo trusts the development key that signed the bundled plugins,
    // by name; a deployment lists its own publishers in `[signers]`.
    let dev_key = dir.join(DEV_KEY_FILE);
    let mut signers = SignersConfig::default();
    if dev_key.is_file() {
        tracing::warn!(
            key = %dev_key.display(),
            "embedded defaults: trusting the development signing key of the bundled plugins; \
             list your own publishers in a config's [signers] for production"
        );
        signers.publishers.push(PublisherConfig {
            name: "warden-dev".into(),
            key: dev_key,
        });
    }
    let mut plugin_grants = std::collections::BTreeMap::new();
    plugin_grants.insert(
        "*".to_owned(),
        GrantsConfig {
            grant_fs: vec![workspace_grant],
            ..GrantsConfig::default()
        },
    );
    Ok(Config {
        workspace: Some("/workspace".into()),
        plugins,
        signers,
        plugin_grants,
        ..Config::default()
    })
}

/// The configuration `warden serve` runs on: `config` when named, else a
/// `warden.toml` found in the working directory (refused when it widens
/// trust), else the embedded defaults.
pub fn choose(
    config: Option<&Path>,
    plugin_dir: Option<&Path>,
    with_bundled: bool,
) -> Result<Config, ServerError> {
    if let Some(path) = config {
        return Config::load(path);
    }
    let local = Path::new("warden.toml");
    if local.is_file() {
        let config = Config::load(local)?;
        crate::found_config::check(&config, local)?;
        return Ok(config);
    }
    embedded(plugin_dir, with_bundled)
}
