//! Lexical path resolution for the read-only check and the circuit breakers.
//!
//! Paths are resolved as text (`.` and `..` folded, no file system access), so a path that
//! climbs out of the workspace with `..` is seen as outside however it is spelled. Symbolic
//! links cannot be seen this way; see the module report.

/// Splits and resolves `path` against `base` (components of an absolute directory). With
/// `dot_glob_climbs`, a component such as `.*` counts as `..`, since a glob starting with a dot
/// may match the parent directory.
pub(crate) fn resolve(base: &[String], path: &str, dot_glob_climbs: bool) -> Vec<String> {
    let mut out: Vec<String> = if path.starts_with('/') {
        Vec::new()
    } else {
        base.to_vec()
    };
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c if dot_glob_climbs && c.starts_with('.') && c.contains(['*', '?', '[']) => {
                out.pop();
            }
            c => out.push(c.to_string()),
        }
    }
    out
}

/// Components of a directory given to the engine (relative ones are read from `/`).
pub(crate) fn absolute(path: &str) -> Vec<String> {
    resolve(&[], path, false)
}

/// True if `path` is `base` or inside it.
pub(crate) fn within(path: &[String], base: &[String]) -> bool {
    path.len() >= base.len() && path.iter().zip(base).all(|(a, b)| a == b)
}

/// Writing here does nothing harmful.
pub(crate) fn is_harmless_sink(target: &str) -> bool {
    matches!(target, "/dev/null" | "/dev/stdout" | "/dev/stderr")
}

/// The device name under `/dev/` that `target` names, if it is there.
pub(crate) fn dev_name(target: &str) -> Option<String> {
    if !target.starts_with('/') {
        return None;
    }
    let comps = absolute(target);
    match comps.split_first() {
        Some((first, rest)) if first == "dev" && !rest.is_empty() => Some(rest.join("/")),
        _ => None,
    }
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

/// The workspace, working directory and home of a check, as components;
/// a relative `cwd` resolves against the workspace.
pub(crate) struct Places {
    pub ws: Vec<String>,
    pub cwd: Vec<String>,
    pub home: Vec<String>,
}

pub(crate) fn places(workspace: &str, cwd: &str, home: &str) -> Places {
    let ws = absolute(workspace);
    let cwd = if cwd.starts_with('/') {
        absolute(cwd)
    } else {
        resolve(&ws, cwd, false)
    };
    Places {
        home: absolute(home),
        cwd,
        ws,
    }
}
