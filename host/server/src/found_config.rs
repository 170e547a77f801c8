//! A `warden.toml` that `warden serve` finds in the working directory may
//! not widen trust.
//!
//! Attack: whoever can write a file into the directory `warden serve`
//! starts in — a cloned repository, a shared project, an agent with a
//! write grant there — drops a `warden.toml` that trusts their publisher
//! key, admits unsigned plugins, or grants a tool a directory elsewhere
//! (a home directory, `/`). Such a file is used only when the operator
//! names it (`--config` or `WARDEN_CONFIG`); found by chance it stops the
//! server, saying what it found and how to use it on purpose.

use std::path::Path;

use crate::config::Config;
use crate::state_guard::resolve;
use crate::{ServerError, grant_spec};

/// What in `config`, found at `path`, would widen trust: empty when
/// nothing does.
pub fn widenings(config: &Config, path: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for publisher in &config.signers.publishers {
        found.push(format!(
            "`[signers]` trusts publisher `{}` ({})",
            publisher.name,
            publisher.key.display()
        ));
    }
    if config.signers.insecure_allow_unsigned {
        found.push("`[signers] insecure-allow-unsigned = true` admits unsigned plugins".into());
    }
    let home = resolve(path.parent().unwrap_or(Path::new(".")));
    let mut grants: Vec<(String, &String)> = Vec::new();
    for (i, p) in config.plugins.iter().enumerate() {
        grants.extend(
            p.grant_fs
                .iter()
                .map(|g| (format!("plugins[{i}].grant-fs"), g)),
        );
    }
    for (name, g) in &config.plugin_grants {
        grants.extend(
            g.grant_fs
                .iter()
                .map(|s| (format!("plugin-grants.{name}.grant-fs"), s)),
        );
    }
    if let Some(sandbox) = &config.sandbox {
        grants.extend(
            sandbox
                .grant_fs
                .iter()
                .map(|g| ("sandbox.grant-fs".to_owned(), g)),
        );
    }
    for (at, spec) in grants {
        let host = Path::new(grant_spec::fs_host(spec));
        // Relative grants resolve against the working directory, which is
        // where this file was found.
        let dir = resolve(&home.join(host));
        if !dir.starts_with(&home) {
            found.push(format!(
                "`{at}` grants {}, outside {}",
                dir.display(),
                home.display()
            ));
        }
    }
    found
}

/// Refuses a configuration found at `path` (not named by the operator)
/// that widens trust.
pub fn check(config: &Config, path: &Path) -> Result<(), ServerError> {
    let found = widenings(config, path);
    if found.is_empty() {
        return Ok(());
    }
    Err(ServerError::FoundConfig(format!(
        "{} was found in the working directory and widens trust: {}. A configuration that does \
         this is used only when named: pass `--config {}` (or set WARDEN_CONFIG) if you mean it",
        path.display(),
        found.join("; "),
        path.display()
    )))
}
