//! The options and environment every git invocation carries.
//!
//! Attack: git configuration and environment that run programs or move
//! traffic (spec 3.3): fsmonitor and hooks on status/commit, pagers and
//! editors through a shell, credential helpers and askpass programs,
//! remote helpers (`ext::`), submodule recursion, cross-host redirects and
//! proxies that bypass the address pin, `GIT_CONFIG_*`/`GIT_DIR`/`*_proxy`
//! variables inherited from the host. Command-line `-c` beats every config
//! file, so each hazard gets a neutralising value here; the environment is
//! built from nothing (`env -i`), so nothing inherited survives.

/// `-c` values for every invocation, in order; `safe.directory` follows.
pub(crate) const NEUTRALISERS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=",
    "credential.helper=",
    "init.templateDir=",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.ssh.allow=always",
    "submodule.recurse=false",
    "http.followRedirects=false",
    "http.proxy=",
    "transfer.fsckObjects=true",
];

/// Resets curl's resolve list before the pin (a later empty value would
/// clear the pin: order matters, spec 3.1 T7).
pub(crate) const RESOLVE_RESET: &str = "http.curloptResolve=";

/// What `GIT_SSH_COMMAND` is when no ssh connection is wanted.
pub(crate) const NO_SSH: &str = "/bin/false";

/// The program path inside the git image.
pub(crate) const GIT: &str = "/usr/bin/git";

/// The fixed part of the environment (spec 3.6), before the per-call
/// `GIT_SSH_COMMAND`, ceiling and identity.
pub(crate) const BASE_ENV: &[(&str, &str)] = &[
    ("PATH", "/usr/bin:/bin"),
    ("HOME", "/nonexistent"),
    ("LANG", "C.UTF-8"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_ATTR_NOSYSTEM", "1"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_ASKPASS", "/bin/false"),
    ("SSH_ASKPASS", "/bin/false"),
    ("GIT_SSH_VARIANT", "ssh"),
    ("GIT_OPTIONAL_LOCKS", "0"),
];
