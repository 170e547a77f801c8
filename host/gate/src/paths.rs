//! The denied paths a backend asks about while a call runs.
//!
//! Attack: a tool reaching a denied file the decision never saw — a
//! search over the workspace that returns lines from `secrets/`, a
//! listing that names a private key. The decision checks the paths a call
//! names; what a tool finds by walking, it checks here, against the same
//! `[protect] read` patterns of the calling agent, with the same anchors.
//! Backends that cannot see each write (a container) ask which paths are
//! protected (`[protect] write`), unless a person approved the call.

use std::sync::Arc;

use warden_api::{Effects, PathGuard};
use warden_policy::{Env, Protection};

/// One call's denied paths.
#[derive(Debug)]
pub struct CallPaths {
    protection: Arc<Protection>,
    workspace: String,
    cwd: String,
    home: String,
    /// Who allowed the call: what it may change where it runs.
    effects: Effects,
}

impl CallPaths {
    pub fn new(protection: Arc<Protection>, env: &Env<'_>, effects: Effects) -> CallPaths {
        CallPaths {
            protection,
            workspace: env.workspace.to_owned(),
            cwd: env.cwd.to_owned(),
            home: env.home.to_owned(),
            effects,
        }
    }

    fn env(&self) -> Env<'_> {
        Env {
            workspace: &self.workspace,
            project: &self.workspace,
            cwd: &self.cwd,
            home: &self.home,
        }
    }
}

impl PathGuard for CallPaths {
    fn denied(&self, path: &str) -> Option<String> {
        self.protection.denied(path, &self.env()).map(|pattern| {
            format!(
                "`{path}` is a denied path (`[protect] read`: `{pattern}`); no tool may read it"
            )
        })
    }

    fn protected(&self, path: &str) -> Option<String> {
        self.protection.protected(path, &self.env()).map(|pattern| {
            format!(
                "`{path}` is a protected path (`[protect] write`: `{pattern}`); changing it needs a person's approval"
            )
        })
    }

    fn effects(&self) -> Effects {
        self.effects
    }
}
