//! The fs plugin's runtime with no gate around it: a fresh instance, the
//! guest's `fs_read`, the instance dropped; no policy, audit, argument
//! check or transport. Beside a served call's ratio to `ping`, `ping`
//! plus this shows how much of the ratio the runtime alone already
//! takes. It is not a strict floor: a served host makes each call's
//! instance ahead and drops it after the answer, so with a client slow
//! enough to turn around, those are off the call's path. It is timed in
//! process before the MCP round trips: timed between their rounds, it
//! found the caches the served host left, and the same 1 B read came out
//! anywhere from 32 to 56 µs.

use std::time::{Duration, Instant};

use serde_json::json;
use warden_api::{BackendCall, CallLimits, Grants, ToolSpec};
use warden_runtime::Plugin;

use super::{check, failed};
use crate::{Loaded, ServerError};

/// The fs plugin, its `fs_read`, and the grants and limits of the
/// benchmark's calls.
pub(super) struct Alone {
    plugin: Plugin,
    spec: ToolSpec,
    grants: Grants,
    limits: CallLimits,
}

impl Alone {
    pub fn new(host: &Loaded, grants: &Grants) -> Result<Alone, ServerError> {
        let (plugin, spec) = host
            .plugins
            .iter()
            .find_map(|(p, _)| {
                let spec = p
                    .manifest()
                    .tools
                    .iter()
                    .find(|t| t.name.as_str() == "fs_read")?;
                Some((p.clone(), spec.clone()))
            })
            .ok_or_else(|| {
                failed("the call benchmark needs the fs plugin: pass it with --plugin")
            })?;
        Ok(Alone {
            plugin,
            spec,
            grants: grants.clone(),
            limits: host.limits,
        })
    }

    /// One `fs_read` of `file` (under the granted `/workspace`), timed.
    pub async fn time(&self, file: &str) -> Result<Duration, ServerError> {
        let args = json!({ "path": file });
        let context = super::request(&args, 0).context;
        let started = Instant::now();
        let envelope = self
            .plugin
            .invoke(BackendCall {
                tool: &self.spec,
                args: &args,
                context: &context,
                grants: &self.grants,
                limits: self.limits,
                events: None,
                paths: None,
                cwd: Some("/workspace"),
                remote: None,
            })
            .await;
        let took = started.elapsed();
        check(envelope)?;
        Ok(took)
    }
}
