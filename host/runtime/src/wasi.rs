//! The one place a call's grants become a WASI context.
//!
//! Attack: a plugin reaching anything the operator did not grant — the
//! host's files, environment, network, stdio. The context starts from
//! nothing (no env, no args, closed stdin, captured stdout/stderr, TCP,
//! UDP and name lookup off) and gains exactly what both the operator's
//! grant and the plugin's manifest allow: the granted directories, each at
//! the weaker of the two accesses; the granted environment variables the
//! plugin asked for; and, when some network rule admits raw sockets, TCP
//! and UDP behind the address check of [`crate::sockets`], with name lookup
//! only when a rule names hosts. Containment within a directory (`..`,
//! absolute paths, symlinks pointing out) is enforced by wasmtime-wasi's
//! capability-based filesystem, which resolves every path beneath its
//! preopen.

use std::sync::Arc;

use warden_api::net::EffectiveNet;
use warden_api::{FsAccess, Grants, RequestedCapabilities};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use crate::denials::Denials;
use crate::output::CappedOutput;
use crate::sockets;

/// A call's WASI context and the directory relative paths resolve against.
pub(crate) struct CallWasi {
    pub ctx: WasiCtx,
    /// Guest paths of the directories granted, first one first.
    pub dirs: Vec<String>,
    /// Where relative paths resolve: the call's directory when a grant
    /// covers it, else (no directory given) the first granted one; `None`
    /// when nothing covers it, so relative paths are refused rather than
    /// resolved somewhere the decision never looked.
    pub cwd: Option<String>,
}

pub(crate) struct CallIo<'a> {
    pub stdout: &'a CappedOutput,
    pub stderr: &'a CappedOutput,
    pub fs_on_call_thread: bool,
    /// The directory the decision resolved relative paths against.
    pub cwd: Option<&'a str>,
}

pub(crate) fn build(
    grants: &Grants,
    requested: &RequestedCapabilities,
    net: &Arc<EffectiveNet>,
    denials: &Denials,
    io: CallIo<'_>,
) -> Result<CallWasi, String> {
    let mut b = WasiCtxBuilder::new();
    b.stdout(io.stdout.clone())
        .stderr(io.stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .allow_blocking_current_thread(io.fs_on_call_thread);
    let mut dirs = Vec::new();
    for grant in &grants.fs {
        let perms = match grant.access.meet(requested.filesystem) {
            FsAccess::None => continue,
            FsAccess::Read => FsPerms::ReadOnly,
            FsAccess::ReadWrite => FsPerms::ReadWrite,
        };
        b.preopened_dir(&grant.host_path, &grant.guest_path, perms)
            .map_err(|e| format!("granting {}: {e}", grant.host_path.display()))?;
        dirs.push(grant.guest_path.clone());
    }
    let cwd = match io.cwd {
        Some(c) => dirs
            .iter()
            .any(|d| std::path::Path::new(c).starts_with(d))
            .then(|| c.to_owned()),
        None => dirs.first().cloned(),
    };
    if let Some(cwd) = &cwd {
        b.initial_cwd(cwd);
    }
    for grant in &grants.env {
        if requested.env.contains(&grant.key) {
            b.env(&grant.key, grant.value.expose());
        }
    }
    if net.allows_sockets() {
        b.allow_tcp(true)
            .allow_udp(true)
            .allow_ip_name_lookup(net.needs_name_lookup())
            .socket_addr_check(sockets::check(net.clone(), denials.clone()));
    }
    Ok(CallWasi {
        ctx: b.build(),
        dirs,
        cwd,
    })
}
