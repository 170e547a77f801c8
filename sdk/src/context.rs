use std::path::{Path, PathBuf};

use crate::__private::bindings::warden::tool::host;
use crate::ToolError;

/// Severity of a log line sent to the host: the host's own type.
pub use warden_api::LogLevel;

/// The call a tool is serving: who asked, and the directory relative paths
/// resolve against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub agent: String,
    pub session: String,
    pub task: Option<String>,
    pub request_id: String,
    /// Where relative paths resolve: the directory the host's decision
    /// resolved them against (the workspace when a grant covers it, else
    /// the first granted directory); `None` when no grant covers it.
    pub cwd: Option<String>,
    /// Every directory this call was granted (guest paths).
    pub granted_dirs: Vec<String>,
}

impl Context {
    /// Sends a log line to the host, which attributes it to this call.
    pub fn log(&self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => host::LogLevel::Trace,
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Warn => host::LogLevel::Warn,
            LogLevel::Error => host::LogLevel::Error,
        };
        host::log(level, message);
    }

    /// Reports progress: `done` out of `total` when known.
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        host::progress(done, total, message);
    }

    /// Why the host refused this call's connections, HTTP requests, name
    /// lookups and opens of special files (FIFOs, devices) so far, oldest
    /// first. A WASI error such as `access-denied` or
    /// `HTTP-request-denied` says only that the host refused; put the last
    /// of these reasons in your error so the agent learns which grant
    /// would help.
    pub fn denials(&self) -> Vec<String> {
        host::denials()
    }

    /// Turns a path argument into the path to open: relative paths resolve
    /// against [`Context::cwd`]; a NUL byte or an empty path is an
    /// invalid-argument error, and an absolute path outside every granted
    /// directory (or any path when nothing was granted) an access-denied
    /// error that names the grants. WASI
    /// enforces containment whatever this says; this only makes the
    /// refusal clear. A denied path of the agent (see [`Context::denied`])
    /// is an access-denied error with the code `denied_path`.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.is_empty() {
            return Err(ToolError::invalid_argument("path is empty"));
        }
        if path.contains('\0') {
            return Err(ToolError::invalid_argument(format!(
                "path {path:?} contains a NUL byte"
            )));
        }
        let p = Path::new(path);
        let outside = match &self.cwd {
            None => true,
            Some(_) => p.is_absolute() && !self.granted_dirs.iter().any(|d| p.starts_with(d)),
        };
        if outside {
            let granted = if self.granted_dirs.is_empty() {
                "no directories".to_owned()
            } else {
                self.granted_dirs.join(", ")
            };
            return Err(ToolError::access_denied(format!(
                "{path} is outside the directories this call was granted ({granted}); \
                 ask the operator for a grant covering it"
            ))
            .with_code("outside_grant"));
        }
        let resolved = match (&self.cwd, p.is_absolute()) {
            (Some(cwd), false) => Path::new(cwd).join(p),
            _ => p.to_path_buf(),
        };
        if let Some(why) = self.denied(&resolved) {
            return Err(ToolError::access_denied(why).with_code("denied_path"));
        }
        Ok(resolved)
    }

    /// Why the host keeps this call away from `path` (a denied path of
    /// the agent, such as a credentials file), whatever the grant covers;
    /// `None` when it does not. A tool that walks a directory skips such
    /// entries (and does not descend into such directories), so their
    /// content never reaches the agent. [`Context::resolve`] already
    /// refuses them.
    pub fn denied(&self, path: &Path) -> Option<String> {
        host::path_denied(&path.to_string_lossy())
    }
}
