//! The places and devices the read-only check and the circuit breakers judge paths against.
//!
//! Paths are resolved as text by [`crate::text_path::resolve`] (`.` and `..` folded, no file system
//! access), the same normalisation file tools get, so a path that climbs out of the workspace
//! with `..` is seen as outside however it is spelled. Symbolic links cannot be seen this way.

use std::borrow::Cow;

use crate::text_path::{resolve, resolve_cow};

/// Writing here does nothing harmful.
pub(crate) fn is_harmless_sink(target: &str) -> bool {
    matches!(target, "/dev/null" | "/dev/stdout" | "/dev/stderr")
}

/// The device name under `/dev/` that `target` names, if it is there.
pub(crate) fn dev_name(target: &str) -> Option<String> {
    if !target.starts_with('/') {
        return None;
    }
    resolve("/", target, false)
        .strip_prefix("/dev/")
        .map(str::to_owned)
}

/// Disks, partitions and raw memory: overwriting them destroys data outside any file system.
pub(crate) fn is_block_device(target: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sd", "nvme", "hd", "vd", "xvd", "mmcblk", "disk", "mapper/", "loop", "md", "dm-", "nbd",
        "mem", "kmem", "port",
    ];
    dev_name(target).is_some_and(|d| PREFIXES.iter().any(|p| d.starts_with(p)))
}

/// Devices a write to which destroys nothing (`/dev/null`, terminals, descriptors).
pub(crate) fn is_harmless_device(name: &str) -> bool {
    matches!(
        name,
        "null" | "zero" | "full" | "random" | "urandom" | "stdout" | "stderr" | "stdin" | "tty"
    ) || name.starts_with("fd/")
        || name.starts_with("pts/")
}

/// The workspace, working directory and home of a check, normalised; a relative `cwd`
/// resolves against the workspace, a relative workspace or home against `/`. Borrowed from the
/// environment when already normal, as they nearly always are.
#[derive(Debug)]
pub(crate) struct Places<'a> {
    pub ws: Cow<'a, str>,
    pub cwd: Cow<'a, str>,
    pub home: Cow<'a, str>,
    /// The home given was absolute (a relative one is never inside the workspace).
    pub home_absolute: bool,
}

impl<'a> Places<'a> {
    pub(crate) fn new(workspace: &'a str, cwd: &'a str, home: &'a str) -> Places<'a> {
        let ws = resolve_cow("/", workspace, false);
        Places {
            cwd: resolve_cow(&ws, cwd, false),
            home: resolve_cow("/", home, false),
            home_absolute: home.starts_with('/'),
            ws,
        }
    }
}
