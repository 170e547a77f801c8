//! The first checks of the validation gate on a built (or supplied)
//! component, before any case runs: it is a component that instantiates
//! against Warden's own linker, it carries exactly one tool whose
//! embedded name is the derived name and that no other tool already
//! has, and what it asks for fits the resolved grants.
//!
//! Attack: a generated tool that is other than the one approved — one
//! that imports what Warden's world does not offer, names itself after
//! another tool (or shadows a built-in), smuggles in more tools, or asks
//! for files, hosts or environment the operator's `[toolsmith.sandbox]`
//! does not give. Any of these fails the validation: nothing is narrowed
//! to fit (Wassette's identity rule; the "fail, do not narrow").

use std::path::Path;

use warden_api::{FsAccess, Manifest, RequestedCapabilities};
use warden_runtime::{Plugin, Runtime, RuntimeConfig};
use warden_toolsmith::{Derived, FsMode, Network, Sandbox};

/// How the runtime generated tools run on is set up: fuel metered
/// (engine-wide, so the host's plugins keep their own runtime without
/// it), at most 16 calls at once; with `state_dir`, the host's compile
/// cache there (its entries name the engine's settings, so fuel-metered
/// code is never mistaken for the plugins').
pub fn fuel_config(state_dir: Option<&Path>) -> Result<RuntimeConfig, crate::ServerError> {
    let mut config = match state_dir {
        Some(dir) => RuntimeConfig::new(Some(dir.join("cache")))
            .with_cache_key(crate::state::cache_key(dir)?),
        None => RuntimeConfig::new(None),
    }
    .with_fuel();
    config.max_concurrent_calls = 16;
    Ok(config)
}

/// The runtime generated tools run on, built now (see [`fuel_config`]).
pub fn fuel_runtime(state_dir: Option<&Path>) -> Result<Runtime, crate::ServerError> {
    Ok(Runtime::new(fuel_config(state_dir)?)?)
}

/// The fuel runtime, built on first use, off the async threads: most
/// hosts never load a generated tool, and an engine with its pooling
/// allocator would cost every start milliseconds before `initialize`.
#[derive(Debug)]
pub struct LazyRuntime {
    config: RuntimeConfig,
    built: tokio::sync::OnceCell<Runtime>,
}

impl LazyRuntime {
    /// A runtime to be built with `config` when first asked for.
    pub fn new(config: RuntimeConfig) -> LazyRuntime {
        LazyRuntime {
            config,
            built: tokio::sync::OnceCell::new(),
        }
    }

    /// The runtime, built now if this is the first ask. A failed build
    /// is tried again at the next.
    pub async fn get(&self) -> Result<&Runtime, String> {
        let failed =
            |e: &dyn std::fmt::Display| format!("the toolsmith's runtime was not built: {e}");
        self.built
            .get_or_try_init(|| async {
                let config = self.config.clone();
                tokio::task::spawn_blocking(move || Runtime::new(config))
                    .await
                    .map_err(|e| failed(&e))?
                    .map_err(|e| failed(&e))
            })
            .await
    }
}

/// Loads `wasm` with `runtime` (compiled and linked against Warden's
/// world, `tools()` checked against its manifest) and checks it against
/// `derived`; `taken` tells whether a tool name is already served. The
/// runtime must meter fuel: `[toolsmith.sandbox]`'s fuel binds every call.
pub async fn check_component(
    runtime: &Runtime,
    wasm: &[u8],
    derived: &Derived,
    taken: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Plugin, String> {
    if !runtime.meters_fuel() {
        return Err(
            "generated tools run on a runtime that meters fuel; this one does not".to_owned(),
        );
    }
    let path = Path::new("toolsmith").join(format!("{}.wasm", derived.name));
    let plugin = runtime
        .load_bytes(&path, wasm)
        .await
        .map_err(|e| format!("the component does not load against Warden's linker: {e}"))?;
    identity(plugin.manifest(), derived, taken)?;
    fits_grants(&plugin.manifest().capabilities, &derived.grants)?;
    Ok(plugin)
}

/// Exactly one tool, named as derived, and the name free.
pub fn identity(
    manifest: &Manifest,
    derived: &Derived,
    taken: &(dyn Fn(&str) -> bool + Sync),
) -> Result<(), String> {
    let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
    if names != [derived.name.as_str()] {
        return Err(format!(
            "the component's tools are {names:?}; a generated tool is exactly one, named `{}`",
            derived.name
        ));
    }
    if taken(&derived.name) {
        return Err(format!(
            "`{}` is already the name of another tool",
            derived.name
        ));
    }
    Ok(())
}

/// Whether every capability the component requests is within `grants`.
pub fn fits_grants(requested: &RequestedCapabilities, grants: &Sandbox) -> Result<(), String> {
    let mut beyond = Vec::new();
    let writable = grants.fs.iter().any(|g| g.mode == FsMode::Rw);
    match requested.filesystem {
        FsAccess::None => {}
        FsAccess::Read if !grants.fs.is_empty() => {}
        FsAccess::ReadWrite if writable => {}
        access => beyond.push(format!("filesystem access `{access:?}`")),
    }
    let allowed: &[String] = match &grants.network {
        Network::None => &[],
        Network::Allow(hosts) => hosts,
    };
    for pattern in &requested.network {
        let text = pattern.to_string();
        if !allowed.contains(&text) {
            beyond.push(format!("network `{text}`"));
        }
    }
    for var in &requested.env {
        beyond.push(format!("environment variable `{var}`"));
    }
    if beyond.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the component asks for more than `[toolsmith.sandbox]` grants: {}",
            beyond.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;
    use warden_toolsmith::FsGrant;

    fn requested(filesystem: FsAccess, network: &[&str], env: &[&str]) -> RequestedCapabilities {
        RequestedCapabilities {
            filesystem,
            network: network.iter().map(|n| n.parse().unwrap()).collect(),
            env: env.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn requests_beyond_the_grants_fail_and_are_not_narrowed() {
        let none = Sandbox::default();
        assert_eq!(
            fits_grants(&requested(FsAccess::None, &[], &[]), &none),
            Ok(())
        );
        let err = fits_grants(
            &requested(FsAccess::Read, &["api.example.com:443"], &["TOKEN"]),
            &none,
        )
        .unwrap_err();
        assert!(
            err.contains("filesystem")
                && err.contains("api.example.com:443")
                && err.contains("TOKEN"),
            "{err}"
        );
        let ro = Sandbox {
            fs: vec![FsGrant {
                path: "data".into(),
                mode: FsMode::Ro,
            }],
            network: Network::Allow(vec!["api.example.com:443".into()]),
            ..Sandbox::default()
        };
        assert_eq!(
            fits_grants(
                &requested(FsAccess::Read, &["api.example.com:443"], &[]),
                &ro
            ),
            Ok(())
        );
        assert!(fits_grants(&requested(FsAccess::ReadWrite, &[], &[]), &ro).is_err());
        assert!(
            fits_grants(
                &requested(FsAccess::None, &["other.example.com:443"], &[]),
                &ro
            )
            .is_err()
        );
    }
}
