//! Docker and Kubernetes sandboxes for Warden's heavyweight tools.
//!
//! Owns: the sandbox backends behind one [`Sandbox`] trait (Docker by
//! default; Kubernetes pods through kube-rs, in [`kubernetes`]), the sandbox images (built locally from Debian packages, keyed by
//! recipe digest), the pure mapping from a call's grants and the config
//! to a container spec, the egress firewall, the connection to the Docker
//! engine ([`Docker`]: bollard, in `docker.rs` only), container lifecycle
//! strategies (per-agent with a grace period, per-task, per-call),
//! reconciliation of orphans, log shipping, the host-native tools that
//! run in containers: `terminal_exec`, `code_run`, `browser_*`, `desktop_*`,
//! and the containers of stdio MCP servers the bridge's `docker` runtime
//! attaches to ([`stdio_server`]), and the toolsmith's builder image and
//! build containers ([`builder`]).
//!
//! Does not own: policy (the gate decides before a call gets here), the
//! grants themselves (the operator's config), or any other tool category:
//! if Docker is unavailable only these tools fail.

pub mod builder;
mod config;
mod docker;
pub mod egress;
mod error;
pub mod images;
pub mod kubernetes;
pub mod lifecycle;
pub mod logs;
pub mod masks;
pub mod pixels;
pub mod reconcile;
mod sandbox;
pub mod spec;
pub mod stdio_server;
mod tools;

pub use config::{DEFAULT_INSTANCE, GitSettings, LogShipping, SandboxConfig, Strategy};
pub use docker::{Docker, ExecOutput, ExecRequest, ManagedContainer};
pub use error::SandboxError;
pub use kubernetes::{BackendKind, KubeSandbox, KubernetesSettings};
pub use sandbox::{DockerSandbox, RunOutput, RunRequest, Sandbox, SharedSandbox, reconcile};
pub use stdio_server::{ServerHandle, ServerSettings, StdioServer, StdioServers};
pub use tools::shell::AGENT_SHELL;
pub use tools::{SandboxTools, git_operation};
