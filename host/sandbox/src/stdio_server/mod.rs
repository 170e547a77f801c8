//! Stdio MCP servers in containers: the MCP bridge's `docker` runtime.
//! One long-lived container per upstream session, its stdin and stdout
//! FIFOs that Warden owns ([`pipes`]), its stderr attached; removed when
//! the session ends, and by the next host's reconciliation when the host
//! was killed.
//!
//! Attack: a bridged MCP server is third-party code that may be hostile
//! or compromised. What its container gets is in [`spec`] (no network or
//! a filtered one, read-only root, no capabilities, limits, no host
//! files, only the declared environment); what stops it from stalling
//! Warden through its stdio is in [`io`]. It carries the labels the
//! sandbox's reconciliation reads, so a container whose host is gone is
//! removed by the same pass as the sandbox's.
//!
//! Secrets are passed as container environment: `docker inspect` shows
//! them to whoever may use the Docker engine (who is root on the host
//! anyway). They never appear on an argv.

mod io;
pub mod pipes;
pub mod spec;

use std::time::Duration;

use tokio::sync::OnceCell;
use warden_api::Grants;
use warden_api::net::{HostMatch, NetPattern};

pub use io::{ServerStdin, ServerStdout, StderrSink};
pub use spec::ServerSettings;

use crate::docker::Docker;
use crate::reconcile::this_host;
use crate::spec::{HostIdentity, Network, network, subdomains_refused};
use crate::{SandboxError, reconcile};

/// How long a server gets to exit after its stdin closes, and again
/// after SIGTERM, before it is killed.
const GRACE: Duration = Duration::from_secs(3);

/// How long starting a server (engine connection, reconciliation, name
/// resolution, network holder and firewall, the server's container) may
/// take.
pub const START_LIMIT: Duration = Duration::from_secs(60);

/// Starts one bridge's server containers.
#[derive(Debug)]
pub struct StdioServers {
    settings: ServerSettings,
    host: HostIdentity,
    docker: OnceCell<Docker>,
    /// The installation's orphans are removed before the first start.
    reconciled: OnceCell<()>,
}

impl StdioServers {
    /// Checks what can be checked without Docker: an image is named, and
    /// every network grant can be enforced.
    pub fn new(settings: ServerSettings) -> Result<StdioServers, SandboxError> {
        if settings.image.trim().is_empty() {
            return Err(SandboxError::Grant {
                reason: "a containerised server needs an image".into(),
            });
        }
        let allow_all = settings
            .net
            .iter()
            .any(|g| matches!(g, NetPattern::AllowAll));
        for grant in &settings.net {
            if let NetPattern::Host {
                host: HostMatch::Subdomains(d),
                ..
            } = grant
                && !allow_all
            {
                return Err(subdomains_refused(d));
            }
        }
        Ok(StdioServers {
            settings,
            host: this_host(),
            docker: OnceCell::new(),
            reconciled: OnceCell::new(),
        })
    }

    pub fn settings(&self) -> &ServerSettings {
        &self.settings
    }

    /// Starts a server container for upstream session `session` and
    /// attaches to it; its stderr goes to `stderr`. Fails after
    /// [`START_LIMIT`] rather than wait forever for a stuck engine.
    pub async fn start(
        &self,
        session: &str,
        stderr: StderrSink,
    ) -> Result<StdioServer, SandboxError> {
        tokio::time::timeout(START_LIMIT, self.start_now(session, stderr))
            .await
            .map_err(|_| SandboxError::Docker {
                operation: "start a bridged server's container".into(),
                reason: format!("it was not running within {} s", START_LIMIT.as_secs()),
            })?
    }

    async fn start_now(
        &self,
        session: &str,
        stderr: StderrSink,
    ) -> Result<StdioServer, SandboxError> {
        let docker = self.docker.get_or_try_init(Docker::connect).await?.clone();
        self.reconciled
            .get_or_try_init(|| async {
                let removed = reconcile(&docker, &self.settings.instance).await?;
                if removed > 0 {
                    tracing::info!(removed, "removed orphaned Warden containers");
                }
                let removed = pipes::remove_orphans(crate::reconcile::process_start);
                if removed > 0 {
                    tracing::info!(removed, "removed the stdio directories of gone hosts");
                }
                Ok::<(), SandboxError>(())
            })
            .await?;
        let grants = Grants {
            net: self.settings.net.clone(),
            ..Grants::default()
        };
        let resolved = crate::sandbox::resolve(&grants).await?;
        let (net, pins) = network(&grants.net, &resolved)?;
        let holder = match net {
            Network::None => None,
            net => {
                let holder = spec::network_spec(&self.settings, session, &self.host, net, pins);
                Some(docker.start(&holder).await?)
            }
        };
        let joined = holder
            .as_ref()
            .map_or(Network::None, |id| Network::Joined(id.clone()));
        let started = async {
            let argv = if self.settings.command.is_empty() {
                docker.image_argv(&self.settings.image).await?
            } else {
                self.settings.command.clone()
            };
            let pipes = pipes::Pipes::new(&self.host)?;
            let server = spec::server_spec(
                &self.settings,
                session,
                &self.host,
                joined,
                &argv,
                pipes.dir(),
            )?;
            // Warden's ends first, so the server's opens do not wait.
            let (input, output) = pipes.open()?;
            let (container, attached) = docker.start_attached(&server).await?;
            Ok::<_, SandboxError>((pipes, input, output, container, attached))
        };
        let (pipes, input, output, container, attached) = match started.await {
            Ok(started) => started,
            Err(e) => {
                if let Some(holder) = &holder {
                    let _ = docker.remove(holder).await;
                }
                return Err(e);
            }
        };
        let slot = io::StdinSlot::new(Box::pin(input));
        Ok(StdioServer {
            stdout: io::connect(output, attached, stderr, pipes.out(), container.clone()),
            stdin: ServerStdin::new(slot.clone()),
            handle: ServerHandle {
                docker,
                container,
                holder,
                stdin: slot,
                pipes: Some(pipes),
                removed: false,
            },
        })
    }
}

/// A running server: its stdout, its stdin, and the handle that ends it.
#[derive(Debug)]
pub struct StdioServer {
    pub stdout: ServerStdout,
    pub stdin: ServerStdin,
    pub handle: ServerHandle,
}

/// Ends a server's containers. Dropped without [`ServerHandle::shutdown`],
/// it removes them in the background (best effort; reconciliation
/// catches what a dying host leaves).
pub struct ServerHandle {
    docker: Docker,
    container: String,
    /// The holder of its filtered network namespace, if any.
    holder: Option<String>,
    stdin: io::StdinSlot,
    /// The FIFOs' directory, removed at shutdown (or with the handle).
    pipes: Option<pipes::Pipes>,
    removed: bool,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("container", &self.container)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// The server's container id.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// Closes the server's stdin, gives it [`GRACE`] to exit, stops it
    /// (SIGTERM, then SIGKILL after [`GRACE`]) and removes its containers.
    pub async fn shutdown(&mut self) {
        if self.removed {
            return;
        }
        self.stdin.close().await;
        if !self.docker.wait_exit(&self.container, GRACE).await
            && let Err(e) = self.docker.stop(&self.container, GRACE).await
        {
            tracing::warn!(container = %self.container, error = %e, "stopping a bridged server failed");
        }
        for id in std::iter::once(&self.container).chain(&self.holder) {
            if let Err(e) = self.docker.remove(id).await {
                tracing::warn!(container = %id, error = %e, "removing a bridged server's container failed");
            }
        }
        drop(self.pipes.take());
        self.removed = true;
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let docker = self.docker.clone();
        let ids: Vec<String> = std::iter::once(self.container.clone())
            .chain(self.holder.take())
            .collect();
        runtime.spawn(async move {
            for id in ids {
                let _ = docker.remove(&id).await;
            }
        });
    }
}
