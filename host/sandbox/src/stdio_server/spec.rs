//! The containers of a bridged stdio server, as a pure function of its
//! settings: unit-tested without Docker.
//!
//! Attack: a bridged MCP server — third-party code, often fetched by
//! package name — reading or changing the host, reaching networks it was
//! not given, gaining privileges, or exhausting the machine. Its container
//! runs as uid 1000 with every capability dropped and no-new-privileges,
//! never privileged, an init as PID 1, on a read-only root filesystem with
//! a size-capped tmpfs at /tmp, within memory (no swap), CPU and pids
//! limits, with no host directory mounted and only the declared
//! environment; the engine keeps no log of its output (its stderr goes
//! to Warden's bounded log only). Its network is none, or the namespace of a holder
//! container whose egress filter was installed before the server started
//! (so the server never runs unfiltered).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use warden_api::net::NetPattern;

use crate::images::{ImageKind, SANDBOX_UID};
use crate::spec::{
    ContainerSpec, HOST_ID_LABEL, HOST_PID_LABEL, HOST_START_LABEL, HostIdentity, INSTANCE_LABEL,
    MANAGED_LABEL, MountSpec, Network,
};
use crate::{SandboxConfig, SandboxError};

/// The bridge a container serves (its name).
pub const BRIDGE_LABEL: &str = "warden.bridge";
/// The upstream session it serves: an agent's name, or `shared`.
pub const SESSION_LABEL: &str = "warden.bridge.session";
/// What a bridge's container is: [`ROLE_SERVER`] or [`ROLE_NETWORK`].
pub const ROLE_LABEL: &str = "warden.role";
pub const ROLE_SERVER: &str = "bridge-server";
/// The holder of an allowlisted server's filtered network namespace.
pub const ROLE_NETWORK: &str = "bridge-network";

/// How a bridge's server containers are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// The bridge's name (the [`BRIDGE_LABEL`]).
    pub bridge: String,
    /// A locally built image; never pulled.
    pub image: String,
    /// The server's argv, replacing the image's entrypoint; empty: the
    /// image's own entrypoint and command.
    pub command: Vec<String>,
    /// The whole environment the server is given (declared variables and
    /// secret values), besides what the image itself sets. `HOME` is
    /// `/tmp` unless declared.
    pub env: Vec<(String, String)>,
    /// Egress allowlist in `grant-net` spellings; empty: no network.
    pub net: Vec<NetPattern>,
    /// The Warden installation (reconciliation removes only its orphans).
    pub instance: String,
    pub memory_mb: u64,
    pub cpu_millis: u64,
    pub pids_limit: u32,
    pub tmpfs_mb: u64,
    /// The image of the network holder and its firewall (it needs
    /// iptables): the sandbox base image.
    pub network_image: String,
}

impl ServerSettings {
    /// Settings with the sandbox's default limits and no network.
    pub fn new(bridge: &str, image: &str, instance: &str) -> ServerSettings {
        let defaults = SandboxConfig::default();
        ServerSettings {
            bridge: bridge.to_owned(),
            image: image.to_owned(),
            command: Vec::new(),
            env: Vec::new(),
            net: Vec::new(),
            instance: instance.to_owned(),
            memory_mb: defaults.memory_mb,
            cpu_millis: defaults.cpu_millis,
            pids_limit: defaults.pids_limit,
            tmpfs_mb: defaults.tmpfs_mb,
            network_image: ImageKind::Base.recipe().tag(&defaults.image_prefix),
        }
    }
}

fn labels(
    settings: &ServerSettings,
    session: &str,
    host: &HostIdentity,
    role: &str,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_LABEL.to_owned(), "true".to_owned()),
        (INSTANCE_LABEL.to_owned(), settings.instance.clone()),
        (HOST_ID_LABEL.to_owned(), host.id.clone()),
        (HOST_PID_LABEL.to_owned(), host.pid.to_string()),
        (HOST_START_LABEL.to_owned(), host.start.to_string()),
        (BRIDGE_LABEL.to_owned(), settings.bridge.clone()),
        (SESSION_LABEL.to_owned(), session.to_owned()),
        (ROLE_LABEL.to_owned(), role.to_owned()),
    ])
}

fn tmpfs(mb: u64) -> Vec<(String, String)> {
    vec![(
        "/tmp".to_owned(),
        format!("rw,nosuid,nodev,size={},mode=1777", mb << 20),
    )]
}

/// The server's container: `argv` (the configured command, or the
/// image's) run with its stdin and stdout on the FIFOs of directory
/// `pipes` ([`super::pipes`]), its stderr attached, `network` either none
/// or a holder's namespace ([`Network::Joined`]).
pub fn server_spec(
    settings: &ServerSettings,
    session: &str,
    host: &HostIdentity,
    network: Network,
    argv: &[String],
    pipes: &Path,
) -> Result<ContainerSpec, SandboxError> {
    let mut env = settings.env.clone();
    if !env.iter().any(|(k, _)| k == "HOME") {
        env.push(("HOME".to_owned(), "/tmp".to_owned()));
    }
    Ok(ContainerSpec {
        image: settings.image.clone(),
        user: format!("{SANDBOX_UID}:{SANDBOX_UID}"),
        cmd: Vec::new(),
        entrypoint: Some(super::pipes::entrypoint(argv)?),
        attached: true,
        env,
        working_dir: String::new(),
        labels: labels(settings, session, host, ROLE_SERVER),
        network,
        extra_hosts: Vec::new(),
        mounts: vec![MountSpec {
            host: pipes.to_path_buf(),
            guest: super::pipes::MOUNT.to_owned(),
            read_only: true,
        }],
        memory_bytes: settings.memory_mb << 20,
        nano_cpus: settings.cpu_millis.saturating_mul(1_000_000),
        pids_limit: settings.pids_limit,
        tmpfs: tmpfs(settings.tmpfs_mb),
        read_only_rootfs: true,
        drop_all_capabilities: true,
        no_new_privileges: true,
    })
}

/// The holder of a filtered network namespace for the server to join:
/// an idle process, the same hardening, tiny limits; its firewall is
/// installed when it starts ([`crate::Docker::start`]).
pub fn network_spec(
    settings: &ServerSettings,
    session: &str,
    host: &HostIdentity,
    network: Network,
    pins: Vec<(String, IpAddr)>,
) -> ContainerSpec {
    ContainerSpec {
        image: settings.network_image.clone(),
        user: format!("{SANDBOX_UID}:{SANDBOX_UID}"),
        cmd: vec!["sleep".into(), "infinity".into()],
        entrypoint: None,
        attached: false,
        env: Vec::new(),
        working_dir: "/tmp".to_owned(),
        labels: labels(settings, session, host, ROLE_NETWORK),
        network,
        extra_hosts: pins,
        mounts: Vec::new(),
        memory_bytes: 16 << 20,
        nano_cpus: 100_000_000,
        pids_limit: 8,
        tmpfs: tmpfs(1),
        read_only_rootfs: true,
        drop_all_capabilities: true,
        no_new_privileges: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostIdentity {
        HostIdentity {
            id: "h1".into(),
            pid: 42,
            start: 7,
        }
    }

    fn argv() -> Vec<String> {
        vec!["node".into(), "/srv/server.js".into()]
    }

    fn spec(settings: &ServerSettings, session: &str, network: Network) -> ContainerSpec {
        server_spec(
            settings,
            session,
            &host(),
            network,
            &argv(),
            Path::new("/tmp/warden-stdio-x/io"),
        )
        .unwrap()
    }

    fn settings() -> ServerSettings {
        let mut s = ServerSettings::new("gh", "warden/mcp-gh:local", "inst1");
        s.command = vec!["node".into(), "/srv/server.js".into()];
        s.env = vec![("GITHUB_TOKEN".into(), "s3cret".into())];
        s
    }

    #[test]
    fn a_server_gets_every_hardening_no_network_and_its_argv_as_entrypoint() {
        let s = spec(&settings(), "alice", Network::None);
        assert_eq!(s.network, Network::None);
        assert_eq!(s.user, "1000:1000");
        assert!(s.drop_all_capabilities && s.no_new_privileges && s.read_only_rootfs);
        assert_eq!(
            s.mounts,
            [MountSpec {
                host: "/tmp/warden-stdio-x/io".into(),
                guest: "/run/warden-stdio".into(),
                read_only: true,
            }],
            "no host directory but its stdio's, read-only"
        );
        assert_eq!(s.tmpfs[0].0, "/tmp");
        assert!(s.tmpfs[0].1.contains("nosuid,nodev"));
        assert_eq!(s.memory_bytes, 512 << 20);
        assert_eq!(s.pids_limit, 128);
        assert!(s.attached);
        let entrypoint = s.entrypoint.clone().unwrap();
        assert_eq!(entrypoint[0], "/bin/sh");
        assert_eq!(
            entrypoint[4..],
            argv(),
            "its argv, as positional parameters"
        );
        assert!(s.cmd.is_empty());
        // Secrets are environment, never argv.
        assert!(s.env.contains(&("GITHUB_TOKEN".into(), "s3cret".into())));
        assert!(s.env.contains(&("HOME".into(), "/tmp".into())));
        assert!(!s.entrypoint.iter().flatten().any(|a| a.contains("s3cret")));
    }

    #[test]
    fn labels_let_reconciliation_find_orphans() {
        let s = spec(&settings(), "alice", Network::None);
        for (k, v) in [
            (MANAGED_LABEL, "true"),
            (INSTANCE_LABEL, "inst1"),
            (HOST_PID_LABEL, "42"),
            (HOST_START_LABEL, "7"),
            (HOST_ID_LABEL, "h1"),
            (BRIDGE_LABEL, "gh"),
            (SESSION_LABEL, "alice"),
            (ROLE_LABEL, ROLE_SERVER),
        ] {
            assert_eq!(s.labels.get(k).map(String::as_str), Some(v), "{k}");
        }
        let n = network_spec(&settings(), "alice", &host(), Network::None, Vec::new());
        assert_eq!(n.labels[ROLE_LABEL], ROLE_NETWORK);
        assert_eq!(n.labels[INSTANCE_LABEL], "inst1");
    }

    #[test]
    fn an_allowlisted_server_joins_the_filtered_holder() {
        let s = spec(&settings(), "alice", Network::Joined("abc".into()));
        assert_eq!(s.network, Network::Joined("abc".into()));
        assert!(s.extra_hosts.is_empty(), "names are pinned in the holder");
        let n = network_spec(
            &settings(),
            "alice",
            &host(),
            Network::Allowlist(Vec::new()),
            vec![("api.example".into(), "93.184.216.34".parse().unwrap())],
        );
        assert!(n.image.starts_with("warden-sandbox-base:"));
        assert!(!n.attached && n.drop_all_capabilities && n.read_only_rootfs);
        assert_eq!(n.extra_hosts.len(), 1);
    }

    #[test]
    fn a_declared_home_is_kept() {
        let mut set = settings();
        set.env.push(("HOME".into(), "/tmp/h".into()));
        let s = spec(&set, "shared", Network::None);
        assert_eq!(s.env.iter().filter(|(k, _)| k == "HOME").count(), 1);
    }
}
