//! The `docker` runtime of a bridged stdio server: a [`Connector`] whose
//! connections are containers started by `warden-sandbox`
//! ([`StdioServers`]), one per upstream session.
//!
//! Attack: a bridged server — third-party code — reaching the host's
//! files, network or privileges. The container it gets (no network or an
//! allowlist, read-only root, no capabilities, limits, non-root, no host
//! directory) is decided in `warden_sandbox::stdio_server`; here the
//! `[[bridge]]` entry becomes its settings, every value checked with the
//! entry's key path in the error, and its stderr goes to the bridge's
//! bounded log.

use std::sync::Arc;

use warden_api::BoxFuture;
use warden_mcp::bridge::{Connection, Connector, Link, Process, StderrLog};
use warden_sandbox::stdio_server::StderrSink;
use warden_sandbox::{ServerHandle, ServerSettings, StdioServers};

use super::config::BridgeConfig;
use crate::ServerError;

/// Starts a bridge's server in a container for each session.
#[derive(Debug)]
pub struct DockerConnector {
    servers: StdioServers,
    stderr: Arc<StderrLog>,
}

impl DockerConnector {
    /// The connector of `bridge` (entry `at`, e.g. `bridge[0] (gh)`), its
    /// server given `env` (declared variables and secret values) in
    /// containers labelled with Warden installation `instance`.
    pub fn new(
        bridge: &BridgeConfig,
        env: Vec<(String, String)>,
        stderr: Arc<StderrLog>,
        instance: &str,
        at: &str,
    ) -> Result<DockerConnector, ServerError> {
        let err = |key: &str, message: String| ServerError::config(format!("{at}.{key}"), message);
        let image = bridge
            .image
            .as_deref()
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .ok_or_else(|| {
                err(
                    "image",
                    "the `docker` runtime needs the server's image, built locally (Warden never \
                     pulls), e.g. `image = \"warden/mcp-gh:local\"`"
                        .into(),
                )
            })?;
        let net = bridge
            .network
            .patterns()
            .map_err(|(j, e)| err(&format!("network.allow[{j}]"), e))?;
        let mut settings = ServerSettings::new(&bridge.name, image, instance);
        settings.command = bridge.command.clone();
        settings.env = env;
        settings.net = net;
        let servers = StdioServers::new(settings).map_err(|e| err("network", e.to_string()))?;
        Ok(DockerConnector { servers, stderr })
    }
}

impl Connector for DockerConnector {
    fn connect<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Connection, String>> {
        Box::pin(async move {
            let log = self.stderr.clone();
            let sink: StderrSink = Arc::new(move |chunk: &[u8]| log.push(chunk));
            let server = self
                .servers
                .start(session, sink)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Connection {
                link: Link::Stream {
                    read: Box::new(server.stdout),
                    write: Box::new(server.stdin),
                },
                process: Box::new(Container(server.handle)),
            })
        })
    }

    fn runtime(&self) -> &'static str {
        "docker"
    }
}

/// A session's server container.
struct Container(ServerHandle);

impl Process for Container {
    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.shutdown())
    }

    fn describe(&self) -> String {
        let id = self.0.container();
        format!("container {}", id.get(..12).unwrap_or(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridges::config::{BridgeConfig, BridgeNetwork, NetworkName};

    fn bridge(text: &str) -> BridgeConfig {
        toml::from_str(&format!(
            "name = \"gh\"\ncategory = \"external-data\"\ncommand = [\"srv\"]\n{text}"
        ))
        .unwrap()
    }

    fn connector(text: &str) -> Result<DockerConnector, ServerError> {
        DockerConnector::new(
            &bridge(text),
            Vec::new(),
            Arc::new(StderrLog::new(16, Vec::new())),
            "inst",
            "bridge[0] (gh)",
        )
    }

    #[test]
    fn the_image_is_required_and_named_in_the_error() {
        let e = connector("").unwrap_err().to_string();
        assert!(e.contains("bridge[0] (gh).image"), "{e}");
        assert!(e.contains("never"), "{e}");
        let e = connector("image = \" \"").unwrap_err().to_string();
        assert!(e.contains("bridge[0] (gh).image"), "{e}");
    }

    #[test]
    fn allowlists_are_parsed_and_unenforceable_ones_refused() {
        let c = connector("image = \"x:1\"\nnetwork = { allow = [\"1.2.3.4:443\"] }").unwrap();
        assert_eq!(c.servers.settings().net.len(), 1);
        assert_eq!(c.runtime(), "docker");
        let e = connector("image = \"x:1\"\nnetwork = { allow = [\"not a host:x\"] }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("network.allow[0]"), "{e}");
        let e = connector("image = \"x:1\"\nnetwork = { allow = [\"*.example.com:443\"] }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("grant each name"), "{e}");
        let none = bridge("image = \"x:1\"\nnetwork = \"none\"");
        assert_eq!(none.network, BridgeNetwork::Named(NetworkName::None));
        assert!(connector("image = \"x:1\"\nnetwork = \"none\"").is_ok());
    }
}
