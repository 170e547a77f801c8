//! The container a call runs in, as a pure function of the call's
//! effective grants and the configuration.
//!
//! Attack: a sandboxed command escaping or overreaching — reading or
//! writing host files it was not granted, reaching the network, gaining
//! privileges (setuid binaries, capabilities, a privileged container),
//! or exhausting the machine (fork bombs, memory hogs, /tmp floods,
//! output the engine would log to the host's disk without limit).
//! Every container this function describes runs as a non-root user with
//! all capabilities dropped and no-new-privileges, never privileged, on a
//! read-only root filesystem with a size-capped tmpfs at /tmp, with
//! memory (no swap), CPU and pids limits, no network unless the grants
//! name host:port pairs (then only those, see [`crate::egress`]), and only
//! the granted directories mounted, read-only unless granted read-write,
//! with the agent's denied paths hidden and its protected paths read-only
//! (see [`crate::masks`]). The engine keeps no log of any of them.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use warden_api::net::{Cidr, HostMatch, NetPattern, classify};
use warden_api::{FsAccess, Grants};

use crate::images::{ImageKind, SANDBOX_UID};
use crate::masks::Masks;
use crate::{SandboxConfig, SandboxError, Strategy};

/// Label every container Warden manages carries.
pub const MANAGED_LABEL: &str = "warden.managed";
pub const HOST_ID_LABEL: &str = "warden.host.id";
/// The Warden installation (state directory) that created the container.
pub const INSTANCE_LABEL: &str = "warden.instance";
pub const HOST_PID_LABEL: &str = "warden.host.pid";
pub const HOST_START_LABEL: &str = "warden.host.start";
pub const AGENT_LABEL: &str = "warden.owner.agent";
pub const TASK_LABEL: &str = "warden.owner.task";
pub const STRATEGY_LABEL: &str = "warden.strategy";
pub const IMAGE_LABEL: &str = "warden.image";

/// The running host process that owns containers: its random id and the
/// pid and start time that tell whether it is still alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIdentity {
    pub id: String,
    pub pid: u32,
    /// The process's start time (clock ticks since boot, from
    /// /proc/PID/stat), so a reused pid is not mistaken for the owner.
    pub start: u64,
}

/// Whose container it is: the owner key the strategy resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerLabels {
    pub agent: String,
    pub task: Option<String>,
    /// The strategy this container lives by (per-call for a call whose
    /// owner could not be resolved).
    pub strategy: Strategy,
}

/// One TCP egress rule: a network and optionally one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EgressRule {
    pub net: Cidr,
    pub port: Option<u16>,
}

/// The container's network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// No interface but loopback.
    None,
    /// A bridge interface whose egress is filtered to these rules.
    Allowlist(Vec<EgressRule>),
    /// A bridge interface reaching public addresses only (and the
    /// addresses these rules name): `insecure:allow-all`.
    Public(Vec<EgressRule>),
    /// The network namespace of another container (by id), already
    /// filtered: how a bridged server gets an allowlist without ever
    /// running unfiltered (see [`crate::stdio_server`]).
    Joined(String),
}

/// A host directory mounted into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSpec {
    pub host: PathBuf,
    pub guest: String,
    pub read_only: bool,
}

/// Everything Docker needs to create one sandbox container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    pub image: String,
    /// `uid:gid`, never root.
    pub user: String,
    /// The idle main process: calls run as `docker exec` beside it.
    pub cmd: Vec<String>,
    /// Replaces the image's entrypoint when set (a bridged server's argv).
    pub entrypoint: Option<Vec<String>>,
    /// Whether the host attaches to the main process's stderr before it
    /// starts (the stream ends when the container exits): a bridged
    /// server, whose stdin and stdout are FIFOs of its mounts.
    pub attached: bool,
    pub env: Vec<(String, String)>,
    /// Empty: the image's own.
    pub working_dir: String,
    pub labels: BTreeMap<String, String>,
    pub network: Network,
    /// Names from network grants, pinned to the addresses they resolved to.
    pub extra_hosts: Vec<(String, IpAddr)>,
    pub mounts: Vec<MountSpec>,
    pub memory_bytes: u64,
    pub nano_cpus: u64,
    pub pids_limit: u32,
    /// tmpfs mounts: path and mount options.
    pub tmpfs: Vec<(String, String)>,
    pub read_only_rootfs: bool,
    /// Always true; here so the invariant is visible in tests.
    pub drop_all_capabilities: bool,
    pub no_new_privileges: bool,
}

/// The inputs of [`container_spec`] besides the grants and config.
#[derive(Debug, Clone)]
pub struct SpecInput<'a> {
    pub kind: ImageKind,
    pub host: &'a HostIdentity,
    pub owner: &'a OwnerLabels,
    /// Addresses of the DNS names the network grants mention, resolved by
    /// the caller; a name missing here is an error, never "allow".
    pub resolved: &'a BTreeMap<String, Vec<IpAddr>>,
    /// Denied and protected paths to lay over the granted mounts.
    pub masks: &'a Masks,
}

/// The container spec for a call: pure, so every security property is
/// unit-tested without Docker.
pub fn container_spec(
    input: &SpecInput<'_>,
    grants: &Grants,
    config: &SandboxConfig,
) -> Result<ContainerSpec, SandboxError> {
    let (network, extra_hosts) = network(&grants.net, input.resolved)?;
    let mut mounts = mounts(grants)?;
    let working_dir = mounts
        .first()
        .map_or_else(|| "/tmp".to_owned(), |m| m.guest.clone());
    mounts.extend(input.masks.read_only.iter().cloned());
    mounts.extend(input.masks.hidden_files.iter().map(|guest| MountSpec {
        host: PathBuf::from("/dev/null"),
        guest: guest.clone(),
        read_only: true,
    }));
    let mut labels = BTreeMap::new();
    labels.insert(MANAGED_LABEL.into(), "true".into());
    labels.insert(HOST_ID_LABEL.into(), input.host.id.clone());
    labels.insert(INSTANCE_LABEL.into(), config.instance.clone());
    labels.insert(HOST_PID_LABEL.into(), input.host.pid.to_string());
    labels.insert(HOST_START_LABEL.into(), input.host.start.to_string());
    labels.insert(AGENT_LABEL.into(), input.owner.agent.clone());
    if let Some(task) = &input.owner.task {
        labels.insert(TASK_LABEL.into(), task.clone());
    }
    labels.insert(STRATEGY_LABEL.into(), input.owner.strategy.as_str().into());
    labels.insert(IMAGE_LABEL.into(), input.kind.as_str().into());
    let tmpfs_bytes = config.tmpfs_mb << 20;
    Ok(ContainerSpec {
        image: input.kind.recipe().tag(&config.image_prefix),
        user: format!("{SANDBOX_UID}:{SANDBOX_UID}"),
        cmd: vec!["sleep".into(), "infinity".into()],
        entrypoint: None,
        attached: false,
        env: vec![
            ("HOME".into(), "/tmp/home".into()),
            ("TMPDIR".into(), "/tmp".into()),
            (
                "PATH".into(),
                "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into(),
            ),
            ("LANG".into(), "C.UTF-8".into()),
        ],
        working_dir,
        labels,
        network,
        extra_hosts,
        mounts,
        memory_bytes: config.memory_mb << 20,
        nano_cpus: config.cpu_millis.saturating_mul(1_000_000),
        pids_limit: config.pids_limit,
        tmpfs: std::iter::once((
            "/tmp".into(),
            format!("rw,nosuid,nodev,size={tmpfs_bytes},mode=1777"),
        ))
        .chain(input.masks.hidden_dirs.iter().map(|guest| {
            (
                guest.clone(),
                "ro,nosuid,nodev,noexec,size=4k,mode=0555".to_owned(),
            )
        }))
        .collect(),
        read_only_rootfs: true,
        drop_all_capabilities: true,
        no_new_privileges: true,
    })
}

/// The granted directories as mounts, read-only unless granted read-write.
pub fn mounts(grants: &Grants) -> Result<Vec<MountSpec>, SandboxError> {
    let mounts: Vec<MountSpec> = grants
        .fs
        .iter()
        .filter(|g| g.access != FsAccess::None)
        .map(|g| MountSpec {
            host: g.host_path.clone(),
            guest: g.guest_path.clone(),
            read_only: g.access != FsAccess::ReadWrite,
        })
        .collect();
    for m in &mounts {
        if !m.guest.starts_with('/') || m.guest.split('/').any(|s| s == "..") {
            return Err(SandboxError::Grant {
                reason: format!("guest path `{}` must be absolute, without `..`", m.guest),
            });
        }
    }
    Ok(mounts)
}

/// A network and the names pinned in the container's /etc/hosts.
pub type NetPlan = (Network, Vec<(String, IpAddr)>);

/// The network that grants `grants` allow, names resolved by the caller
/// into `resolved`.
pub fn network(
    grants: &[NetPattern],
    resolved: &BTreeMap<String, Vec<IpAddr>>,
) -> Result<NetPlan, SandboxError> {
    if grants.is_empty() {
        return Ok((Network::None, Vec::new()));
    }
    let allow_all = grants.iter().any(|g| matches!(g, NetPattern::AllowAll));
    let mut rules = Vec::new();
    let mut pins = Vec::new();
    for grant in grants {
        let NetPattern::Host { scheme, host, port } = grant else {
            continue;
        };
        let port = port.or(scheme.map(|s| s.default_port()));
        let host_rule = |ip: IpAddr| EgressRule {
            net: Cidr {
                addr: ip,
                prefix: if ip.is_ipv4() { 32 } else { 128 },
            },
            port,
        };
        match host {
            HostMatch::Ip(ip) => rules.push(host_rule(*ip)),
            HostMatch::Cidr(c) => rules.push(EgressRule { net: *c, port }),
            // Under allow-all every public address is reachable already,
            // and names resolve through DNS.
            HostMatch::Name(_) | HostMatch::Subdomains(_) if allow_all => {}
            HostMatch::Name(name) => {
                let ips = resolved
                    .get(name)
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| SandboxError::Grant {
                        reason: format!("`{name}` did not resolve to any address"),
                    })?;
                // A name is no way to a non-public address: those need a
                // grant that names the address (an IP or CIDR).
                if let Some((ip, class)) = ips
                    .iter()
                    .find_map(|ip| classify(*ip).map(|class| (*ip, class)))
                {
                    return Err(SandboxError::Grant {
                        reason: format!(
                            "`{name}` resolves to {ip}, a {} address: a name grant reaches public \
                             addresses only; grant `{ip}` itself (an IP or CIDR grant) if this is intended",
                            class.as_str()
                        ),
                    });
                }
                for ip in ips {
                    rules.push(host_rule(*ip));
                    pins.push((name.clone(), *ip));
                }
            }
            HostMatch::Subdomains(d) => return Err(subdomains_refused(d)),
        }
    }
    if allow_all {
        return Ok((Network::Public(rules), Vec::new()));
    }
    Ok((Network::Allowlist(rules), pins))
}

/// Why a `*.domain` grant cannot be enforced in a container (unless it
/// comes with `insecure:allow-all`).
pub fn subdomains_refused(domain: &str) -> SandboxError {
    SandboxError::Grant {
        reason: format!(
            "`*.{domain}`: a container's egress filter works on addresses, resolved by the \
             host when the container starts, and the names below a domain are not \
             known then; grant each name (`api.{domain}:443`)"
        ),
    }
}

/// The DNS names network grants mention, for the caller to resolve.
pub fn names_to_resolve(grants: &Grants) -> Vec<String> {
    grants
        .net
        .iter()
        .filter_map(|g| match g {
            NetPattern::Host {
                host: HostMatch::Name(n),
                ..
            } => Some(n.clone()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
