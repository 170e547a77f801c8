//! The denied paths a backend asks about while a call runs.
//!
//! Attack: a tool reaching a denied file the decision never saw — a
//! search over the workspace that returns lines from `secrets/`, a
//! listing that names a private key. The decision checks the paths a call
//! names; what a tool finds by walking, it checks here, against the same
//! `[protect] read` patterns of the calling agent, with the same anchors.

use std::sync::Arc;

use warden_api::PathGuard;
use warden_policy::{Env, Protection};

/// One call's denied paths.
#[derive(Debug)]
pub struct CallPaths {
    protection: Arc<Protection>,
    workspace: String,
    cwd: String,
    home: String,
}

impl CallPaths {
    pub fn new(protection: Arc<Protection>, env: &Env<'_>) -> CallPaths {
        CallPaths {
            protection,
            workspace: env.workspace.to_owned(),
            cwd: env.cwd.to_owned(),
            home: env.home.to_owned(),
        }
    }
}

impl PathGuard for CallPaths {
    fn denied(&self, path: &str) -> Option<String> {
        let env = Env {
            workspace: &self.workspace,
            project: &self.workspace,
            cwd: &self.cwd,
            home: &self.home,
        };
        self.protection.denied(path, &env).map(|pattern| {
            format!(
                "`{path}` is a denied path (`[protect] read`: `{pattern}`); no tool may read it"
            )
        })
    }
}
