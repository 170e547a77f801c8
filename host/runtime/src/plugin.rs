//! A loaded plugin: its manifest, its compiled component, one
//! `InstancePre`, and the load-time check that `tools()` tells the truth
//! (run when a load compiles; the compile cache keeps only components
//! that passed it).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use warden_api::{Backend, BackendCall, BoxFuture, CallLimits, Envelope, Manifest, ToolSpec};
use wasmtime::component::Component;

use crate::bindings::{self, PluginPre};
use crate::engine::Runtime;
use crate::manifest::{self, ManifestProblem};
use crate::state::HostState;
use crate::{RuntimeError, invoke};

/// Whether a load compiled the component or reused the compile cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadOrigin {
    Compiled,
    Cached,
}

pub(crate) struct PluginInner {
    pub runtime: Runtime,
    pub path: PathBuf,
    pub manifest: Manifest,
    pub digest: String,
    pub origin: LoadOrigin,
    pub pre: PluginPre<HostState>,
    /// The effective network grant of the grants it is called with.
    pub net: crate::net_memo::NetMemo,
    /// An instance made ahead for the next call (single-threaded hosts).
    pub spare: crate::spare::SpareSlot,
}

/// A loaded plugin. Cheap to clone; calls on clones share the compiled
/// component and nothing else.
#[derive(Clone)]
pub struct Plugin {
    pub(crate) inner: Arc<PluginInner>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.inner.manifest.plugin.name)
            .field("path", &self.inner.path)
            .field("digest", &self.inner.digest)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    pub fn name(&self) -> &str {
        &self.inner.manifest.plugin.name
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The plugin digest (`warden_signing::plugin_digest`: the component
    /// and its manifest, what publishers sign): the compile-cache key.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    pub fn origin(&self) -> LoadOrigin {
        self.inner.origin
    }

    /// Whether an instance made ahead waits for the next call: after a
    /// call on a single-threaded runtime, once the answer is on its way.
    pub fn spare_ready(&self) -> bool {
        self.inner.spare.is_ready()
    }

    pub(crate) async fn load(
        runtime: Runtime,
        path: &Path,
        bytes: &[u8],
        admitted: Option<&str>,
    ) -> Result<Plugin, RuntimeError> {
        let (manifest, section) = manifest::read_section(bytes).map_err(|p| match p {
            ManifestProblem::Malformed(reason) => RuntimeError::InvalidComponent {
                path: path.to_path_buf(),
                reason,
            },
            ManifestProblem::Unusable(reason) => RuntimeError::Manifest {
                path: path.to_path_buf(),
                reason,
            },
        })?;
        let digest = match admitted {
            Some(digest) => digest.to_owned(),
            None => warden_signing::plugin_digest(bytes, section),
        };
        Plugin::load_parts(runtime, path, manifest, digest, || Ok(Cow::Borrowed(bytes))).await
    }

    /// [`Plugin::load`] of a component known by its admitted `digest` and
    /// manifest `section` alone: its compiled form comes from the cache,
    /// and only when the cache has none is `code` asked for the bytes (the
    /// caller checks that they still have `digest`).
    pub(crate) async fn load_known(
        runtime: Runtime,
        path: &Path,
        section: &[u8],
        digest: &str,
        code: impl FnOnce() -> Result<Vec<u8>, RuntimeError>,
    ) -> Result<Plugin, RuntimeError> {
        let manifest = Manifest::from_json(section).map_err(|e| RuntimeError::Manifest {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Plugin::load_parts(runtime, path, manifest, digest.to_owned(), || {
            code().map(Cow::Owned)
        })
        .await
    }

    async fn load_parts<'a>(
        runtime: Runtime,
        path: &Path,
        manifest: Manifest,
        digest: String,
        code: impl FnOnce() -> Result<Cow<'a, [u8]>, RuntimeError>,
    ) -> Result<Plugin, RuntimeError> {
        let path_buf = path.to_path_buf();
        let shared = &runtime.shared;
        let cached = shared
            .cache
            .as_ref()
            .and_then(|c| c.get(&shared.engine, &digest));
        let (component, origin) = match cached {
            Some(component) => (component, LoadOrigin::Cached),
            None => {
                let bytes = code()?;
                let started = std::time::Instant::now();
                let component =
                    Component::new(&shared.engine, &*bytes).map_err(|e| RuntimeError::Compile {
                        path: path_buf.clone(),
                        reason: format!("{e:#}"),
                    })?;
                tracing::info!(
                    plugin = %manifest.plugin.name, path = %path.display(),
                    elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
                    "compiled plugin"
                );
                (component, LoadOrigin::Compiled)
            }
        };
        let link_err = |e: wasmtime::Error| RuntimeError::Link {
            path: path_buf.clone(),
            reason: format!("{e:#}"),
        };
        let instance_pre = shared
            .linker
            .instantiate_pre(&component)
            .map_err(link_err)?;
        let pre = PluginPre::new(instance_pre).map_err(link_err)?;
        let plugin = Plugin {
            inner: Arc::new(PluginInner {
                runtime: runtime.clone(),
                path: path_buf,
                manifest,
                digest,
                origin,
                pre,
                net: Default::default(),
                spare: Default::default(),
            }),
        };
        // The cache holds only components that passed this check (they
        // are put there after it), under a tag only this host makes over
        // exactly these bytes and manifest: a load from it has nothing
        // left to learn from `tools()` (its instance was 0.3 to 0.5 ms of
        // each bundled plugin's cached load on a 2-core VM).
        if origin == LoadOrigin::Compiled {
            plugin.cross_check().await?;
            if let Some(cache) = &shared.cache {
                cache.put(&plugin.inner.digest, &component);
            }
        }
        tracing::debug!(plugin = %plugin.name(), ?origin, digest = %plugin.digest(), "loaded plugin");
        Ok(plugin)
    }

    /// Runs `tools()` with no grants and compares it with the manifest, so
    /// what `inspect` shows and what runs cannot differ. A load that
    /// compiled runs it before the compiled form is cached.
    async fn cross_check(&self) -> Result<(), RuntimeError> {
        let mismatch = |reason: String| RuntimeError::ManifestMismatch {
            path: self.inner.path.clone(),
            reason,
        };
        let reported = invoke::list_tools(&self.inner, CallLimits::DEFAULT)
            .await
            .map_err(&mismatch)?;
        let mut reported = reported
            .into_iter()
            .map(from_wit)
            .collect::<Result<Vec<_>, _>>()
            .map_err(&mismatch)?;
        let mut declared = self.inner.manifest.tools.clone();
        reported.sort_by(|a, b| a.name.cmp(&b.name));
        declared.sort_by(|a, b| a.name.cmp(&b.name));
        for tool in &declared {
            match reported.iter().find(|r| r.name == tool.name) {
                None => {
                    return Err(mismatch(format!(
                        "`{}` is in the manifest but not in tools()",
                        tool.name
                    )));
                }
                Some(r) if r != tool => {
                    return Err(mismatch(format!(
                        "`{}` differs between the manifest and tools()",
                        tool.name
                    )));
                }
                Some(_) => {}
            }
        }
        if let Some(extra) = reported
            .iter()
            .find(|r| !declared.iter().any(|d| d.name == r.name))
        {
            return Err(mismatch(format!(
                "`{}` is in tools() but not in the manifest",
                extra.name
            )));
        }
        Ok(())
    }

    /// Runs one call with the grants it holds. Never fails: every problem
    /// is an error envelope.
    pub async fn invoke(&self, call: BackendCall<'_>) -> Envelope {
        invoke::invoke(&self.inner, call).await
    }
}

impl Backend for Plugin {
    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.manifest.tools.clone()
    }

    fn isolation(&self) -> warden_api::Isolation {
        warden_api::Isolation::Wasm
    }

    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope> {
        Box::pin(Plugin::invoke(self, call))
    }

    fn resource<'a>(
        &'a self,
        tool: &'a str,
        id: &'a str,
        limits: CallLimits,
    ) -> BoxFuture<'a, Envelope> {
        Box::pin(invoke::resource(&self.inner, tool, id, limits))
    }
}

/// A spec as `tools()` reported it, in the host's types.
fn from_wit(t: bindings::ToolSpec) -> Result<ToolSpec, String> {
    let json = |what: &str, text: &str| {
        serde_json::from_str(text).map_err(|e| format!("`{}` {what} is not JSON: {e}", t.name))
    };
    let category = bindings::category(t.category);
    Ok(ToolSpec {
        name: t.name.parse().map_err(|e| format!("{e}"))?,
        summary: t.summary.clone(),
        description: t.description.clone(),
        category,
        action_type: t.action_type.parse().map_err(|e| format!("{e}"))?,
        params_schema: json("params schema", &t.params_schema)?,
        result_schema: json("result schema", &t.result_schema)?,
        side_effect: t.side_effect,
        specifier_template: t.specifier_template.clone(),
        examples: t
            .examples
            .iter()
            .map(|e| {
                Ok(warden_api::Example {
                    description: e.description.clone(),
                    args: json("example", &e.args_json)?,
                })
            })
            .collect::<Result<_, String>>()?,
        resources: t.resources.clone(),
    })
}
