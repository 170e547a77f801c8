//! Building one git invocation: argv and the complete environment, with
//! no shell in between (the Docker sandbox execs the argv as is).
//!
//! Attack: everything between a vetted request and the git process —
//! config and environment that run programs (see `neutral`), values read
//! as options (see `values`), a URL re-resolved or rewritten on the way
//! (the pins, and the URL rendered from the vetted form). Every global
//! option and neutraliser comes before the subcommand; user values follow
//! `--end-of-options` or `--`.

mod neutral;
mod op;
mod ssh;
mod subcommand;
mod values;

pub use op::{GitOp, LOG_FORMAT, ResetMode};

use std::ffi::OsString;
use std::net::IpAddr;

use warden_api::net::Host;

use crate::error::ArgError;
use crate::url::Transport;
use crate::vet::Vetted;

/// Where git runs, as the container sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    repo: String,
    known_hosts: String,
    identity: Option<(String, String)>,
}

impl Workspace {
    /// The working tree at `repo`, an absolute container path below `/`
    /// (`/workspace`). Defaults: known hosts in `/etc/warden/known_hosts`,
    /// no author identity (the repository's `user.*` applies).
    pub fn new(repo: &str) -> Result<Workspace, ArgError> {
        let repo = values::host_path("workspace path", repo.trim_end_matches('/'))?;
        Ok(Workspace {
            repo,
            known_hosts: "/etc/warden/known_hosts".to_owned(),
            identity: None,
        })
    }

    /// The Warden-managed known_hosts file ssh checks host keys against.
    pub fn with_known_hosts(mut self, path: &str) -> Result<Workspace, ArgError> {
        self.known_hosts = values::host_path("known_hosts path", path)?;
        Ok(self)
    }

    /// Author and committer of commits made here.
    pub fn with_identity(mut self, name: &str, email: &str) -> Result<Workspace, ArgError> {
        self.identity = Some((
            values::ident("author name", name)?,
            values::ident("author email", email)?,
        ));
        Ok(self)
    }

    pub fn repo(&self) -> &str {
        &self.repo
    }

    /// The directory git must not search above (the repo's parent).
    fn ceiling(&self) -> &str {
        match self.repo.rfind('/') {
            Some(0) | None => "/",
            Some(i) => &self.repo[..i],
        }
    }
}

/// One git command: run `program` with `args` and exactly `env`, nothing
/// inherited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

impl Invocation {
    /// `program` followed by `args`.
    pub fn argv(&self) -> Vec<OsString> {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// The same command behind `/usr/bin/env -i K=V …`, for runners (such
    /// as `docker exec`) that would otherwise add the container's own
    /// environment.
    pub fn env_i_argv(&self) -> Vec<OsString> {
        let mut argv = vec![OsString::from("/usr/bin/env"), OsString::from("-i")];
        for (k, v) in &self.env {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            argv.push(kv);
        }
        argv.extend(self.argv());
        argv
    }

    /// The value of one environment variable.
    pub fn env_var(&self, key: &str) -> Option<&OsString> {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// The invocation for `op`; network operations need `vetted` (and ssh
/// pins its first address), local ones refuse it.
pub fn git_argv(
    op: &GitOp,
    vetted: Option<&Vetted>,
    ws: &Workspace,
) -> Result<Invocation, ArgError> {
    git_argv_attempt(op, vetted, ws, 0)
}

/// As [`git_argv`], with ssh pinned to the `attempt`-th vetted address
/// (`HostName` takes one address: on a connect failure, retry with the
/// next). HTTPS pins every address on each attempt; curl tries them in order.
pub fn git_argv_attempt(
    op: &GitOp,
    vetted: Option<&Vetted>,
    ws: &Workspace,
    attempt: usize,
) -> Result<Invocation, ArgError> {
    let vetted = match (op.is_network(), vetted) {
        (true, None) => return Err(ArgError::MissingVetted { op: op.name() }),
        (false, Some(_)) => return Err(ArgError::UnexpectedVetted { op: op.name() }),
        (_, v) => v,
    };
    let mut args: Vec<String> = vec!["--no-pager".into(), "--literal-pathspecs".into()];
    for value in neutral::NEUTRALISERS {
        args.push("-c".into());
        args.push((*value).into());
    }
    args.push("-c".into());
    args.push(format!("safe.directory={}", ws.repo));
    let mut ssh_command = neutral::NO_SSH.to_owned();
    if let Some(v) = vetted {
        ssh_command = pin(v, ws, attempt, &mut args)?;
    }
    args.push("-C".into());
    args.push(ws.repo.clone());
    subcommand::subcommand(op, vetted, &mut args)?;

    let mut env: Vec<(String, String)> = neutral::BASE_ENV
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.push(("GIT_SSH_COMMAND".into(), ssh_command));
    env.push(("GIT_CEILING_DIRECTORIES".into(), ws.ceiling().to_owned()));
    if let Some((name, email)) = &ws.identity {
        for who in ["AUTHOR", "COMMITTER"] {
            env.push((format!("GIT_{who}_NAME"), name.clone()));
            env.push((format!("GIT_{who}_EMAIL"), email.clone()));
        }
    }
    Ok(Invocation {
        program: neutral::GIT.into(),
        args: args.into_iter().map(OsString::from).collect(),
        env: env
            .into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect(),
    })
}

/// Adds the transport's pins to `args`; returns `GIT_SSH_COMMAND`.
fn pin(
    v: &Vetted,
    ws: &Workspace,
    attempt: usize,
    args: &mut Vec<String>,
) -> Result<String, ArgError> {
    let url = v.url();
    args.push("-c".into());
    args.push(neutral::RESOLVE_RESET.into());
    match url.transport() {
        Transport::Https | Transport::Http => {
            if url.transport() == Transport::Http {
                args.push("-c".into());
                args.push("protocol.http.allow=always".into());
            }
            // An IP-literal host is never resolved; a name is resolved
            // only from this list.
            if let Host::Name(name) = url.host() {
                let addrs: Vec<String> = v.addrs().iter().map(|a| curl_addr(*a)).collect();
                args.push("-c".into());
                args.push(format!(
                    "http.curloptResolve={name}:{}:{}",
                    url.port(),
                    addrs.join(",")
                ));
            }
            Ok(neutral::NO_SSH.to_owned())
        }
        Transport::Ssh => {
            let ip = v.addrs().get(attempt).ok_or_else(|| ArgError::Invalid {
                what: "ssh address attempt",
                value: attempt.to_string(),
                reason: "there is no further vetted address",
            })?;
            let alias = match url.host() {
                Host::Name(name) => name.clone(),
                Host::Ip(ip) => ip.to_string(),
            };
            Ok(ssh::shell_join(&ssh::ssh_words(
                &alias,
                *ip,
                &ws.known_hosts,
            )))
        }
    }
}

/// An address as `CURLOPT_RESOLVE` takes it (IPv6 in brackets).
fn curl_addr(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

#[cfg(test)]
mod tests;
