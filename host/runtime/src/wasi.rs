//! The one place a call's grants become a WASI context.
//!
//! Attack: a plugin reaching anything the operator did not grant — the
//! host's files, environment, network, stdio. The context starts from
//! nothing (no env, no args, closed stdin, captured stdout/stderr, TCP,
//! UDP and name lookup off) and gains exactly the granted directories,
//! each at the weaker of the operator's grant and what the plugin asked
//! for. Containment within a directory (`..`, absolute paths, symlinks
//! pointing out) is enforced by wasmtime-wasi's capability-based
//! filesystem, which resolves every path beneath its preopen.

use warden_api::{FsAccess, Grants};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use crate::output::CappedOutput;

/// A call's WASI context and the directory relative paths resolve against.
pub(crate) struct CallWasi {
    pub ctx: WasiCtx,
    /// Guest paths of the directories granted, first one first.
    pub dirs: Vec<String>,
}

pub(crate) fn build(
    grants: &Grants,
    requested: FsAccess,
    fs_on_call_thread: bool,
    stdout: &CappedOutput,
    stderr: &CappedOutput,
) -> Result<CallWasi, String> {
    let mut b = WasiCtxBuilder::new();
    b.stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .allow_blocking_current_thread(fs_on_call_thread);
    let mut dirs = Vec::new();
    for grant in &grants.fs {
        let perms = match grant.access.meet(requested) {
            FsAccess::None => continue,
            FsAccess::Read => FsPerms::ReadOnly,
            FsAccess::ReadWrite => FsPerms::ReadWrite,
        };
        b.preopened_dir(&grant.host_path, &grant.guest_path, perms)
            .map_err(|e| format!("granting {}: {e}", grant.host_path.display()))?;
        dirs.push(grant.guest_path.clone());
    }
    if let Some(cwd) = dirs.first() {
        b.initial_cwd(cwd);
    }
    Ok(CallWasi {
        ctx: b.build(),
        dirs,
    })
}
