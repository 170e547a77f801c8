//! The `GIT_SSH_COMMAND` that pins ssh to a vetted address.
//!
//! Attack: DNS rebinding and ssh configuration. Left to itself ssh
//! resolves the host again (a second answer may be 127.0.0.1), reads
//! `~/.ssh/config` and `/etc/ssh/ssh_config` (ProxyCommand, LocalCommand,
//! agent forwarding) and may ask for passwords. With `-F /dev/null`,
//! `HostName=<vetted ip>` and `HostKeyAlias=<host>` it connects to the
//! vetted address while checking the host key under the name, against a
//! Warden-managed `known_hosts` only, never prompting. git runs this
//! string through `sh -c`, so every word is single-quoted, and every value
//! in it has already been restricted to characters that need no quoting.

use std::net::IpAddr;

/// The ssh program in the git image.
const SSH: &str = "/usr/bin/ssh";

/// The words of the ssh command for `host` pinned to `ip`.
pub(crate) fn ssh_words(host: &str, ip: IpAddr, known_hosts: &str) -> Vec<String> {
    let mut words = vec![SSH.to_owned(), "-F".to_owned(), "/dev/null".to_owned()];
    let options = [
        format!("HostName={ip}"),
        format!("HostKeyAlias={host}"),
        "BatchMode=yes".to_owned(),
        "StrictHostKeyChecking=yes".to_owned(),
        format!("UserKnownHostsFile={known_hosts}"),
        "GlobalKnownHostsFile=/dev/null".to_owned(),
        "CheckHostIP=no".to_owned(),
        "UpdateHostKeys=no".to_owned(),
        "VerifyHostKeyDNS=no".to_owned(),
        "CanonicalizeHostname=no".to_owned(),
        "ProxyCommand=none".to_owned(),
        "PermitLocalCommand=no".to_owned(),
        "ForwardAgent=no".to_owned(),
        "ForwardX11=no".to_owned(),
        "ClearAllForwardings=yes".to_owned(),
        "ControlMaster=no".to_owned(),
        "ControlPath=none".to_owned(),
        "ConnectTimeout=30".to_owned(),
    ];
    for option in options {
        words.push("-o".to_owned());
        words.push(option);
    }
    words
}

/// The words joined for `sh -c`, each in single quotes (a `'` inside is
/// written `'\''`).
pub(crate) fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}
