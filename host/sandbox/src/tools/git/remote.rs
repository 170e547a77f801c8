//! clone, fetch and push: the git operations that reach a remote.
//!
//! Attack: server-side request forgery through git. A URL (or a remote
//! the repository names) pointing at loopback, a private network or the
//! metadata service, in any spelling; a name that resolves public for the
//! check and internal for git (rebinding); a redirect, a proxy or a
//! rewritten URL carrying git past the check; a clone that fills the disk
//! or never ends. The URL is parsed and vetted by warden-vcs (https and
//! ssh only, every resolved address public or the host allowlisted); a
//! remote name is resolved with `git ls-remote --get-url` only after the
//! config check and vetted the same way; git gets the vetted URL and the
//! addresses pinned (`http.curloptResolve`, ssh `HostName`), redirects
//! and proxies off; and the command runs in a container of its own whose
//! egress firewall admits TCP to the vetted addresses and port only, no
//! DNS, so even a git that ignored its pins could reach nothing else.
//! A clone lands in a tmpfs of the quota's size and is copied into the
//! workspace only when complete; the deadline removes the container.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Value, json};
use warden_api::net::NetPattern;
use warden_api::{BackendCall, ErrorType, FsAccess, FsGrant, Grants};
use warden_vcs::{
    GitNetPolicy, GitOp, GitUrl, Transport, Vetted, Workspace, git_argv, parse_git_url_with, vet,
};

use super::args::{flag, opt_str, opt_u32, str_arg};
use super::local::{argv, git, succeeded};
use super::repo::Repo;
use crate::images::ImageKind;
use crate::tools::{Failure, Outcome, Place, SandboxTools, in_workspace, text};
use crate::{GitSettings, SandboxError};

/// Where ssh finds the known_hosts file (warden-vcs's default path).
const KNOWN_HOSTS: &str = "/etc/warden/known_hosts";

/// Where a clone is written inside its container before it is copied.
const SCRATCH: &str = "/tmp";
const SCRATCH_DEST: &str = "warden-clone";

pub(super) async fn clone(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let dest = str_arg(call, "dest")?;
    // A clone's files under a `.git` directory would be read as a
    // repository's own files (its config, its hooks) by later commands.
    if dest.split('/').any(|c| c.eq_ignore_ascii_case(".git")) {
        return Err(Failure::args(format!(
            "`dest` `{dest}` has a `.git` component; clone into a plain directory"
        )));
    }
    let guest_dest = in_workspace(call, dest, true)?;
    let repo = Repo::at(call, Some(dest), true)?;
    if std::fs::symlink_metadata(repo.host_dir()).is_ok() {
        return Err(Failure::args(format!(
            "`dest` `{dest}` already exists in the workspace; name a new directory"
        )));
    }
    let url = parse(tools, str_arg(call, "url")?)?;
    let vetted = vetted(tools, &url).await?;
    let ws = Workspace::new(SCRATCH).map_err(|e| Failure::args(e.to_string()))?;
    let op = GitOp::Clone {
        dest: SCRATCH_DEST.to_owned(),
        depth: opt_u32(call, "depth")?,
    };
    let inv = git_argv(&op, Some(&vetted), &ws).map_err(|e| Failure::args(e.to_string()))?;
    // The clone, then (only if it succeeded) the copy into the workspace;
    // the destination is an argument, never script text.
    let mut cmd = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        "d=$1; shift; \"$@\" || exit $?; mkdir -- \"$d\" && cp -a /tmp/warden-clone/. \"$d\"/"
            .to_owned(),
        "clone".to_owned(),
        guest_dest,
    ];
    cmd.extend(argv(&inv));
    let quota = tools.config.git.quota_mb;
    let out = network(tools, call, &vetted, cmd, Some(quota)).await?;
    let out = succeeded(&op, out).map_err(|f| quota_hint(f, quota))?;
    Ok(json!({
        "dest": dest,
        "url": vetted.url().to_string(),
        "addresses": addrs(&vetted),
        "stderr": text(&out.stderr),
    }))
}

pub(super) async fn fetch(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let repo = Repo::at(call, opt_str(call, "repo")?, true)?;
    let remote = str_arg(call, "remote")?;
    let vetted = remote_url(tools, call, &repo, remote).await?;
    let op = GitOp::Fetch {
        remote: remote.to_owned(),
    };
    let out = remote_op(tools, call, &repo, &vetted, &op).await?;
    Ok(json!({"remote": remote, "url": vetted.url().to_string(), "stderr": text(&out.stderr)}))
}

pub(super) async fn push(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let repo = Repo::at(call, opt_str(call, "repo")?, false)?;
    let remote = str_arg(call, "remote")?;
    let vetted = remote_url(tools, call, &repo, remote).await?;
    let op = GitOp::Push {
        remote: remote.to_owned(),
        branch: str_arg(call, "branch")?.to_owned(),
        force: flag(call, "force")?,
    };
    let out = remote_op(tools, call, &repo, &vetted, &op).await?;
    Ok(json!({"remote": remote, "url": vetted.url().to_string(), "stderr": text(&out.stderr)}))
}

/// The URL git would use for `remote`, read after the config check (so no
/// `insteadOf` rewrote it), the one the decision judged, then vetted like
/// a clone's.
async fn remote_url(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    repo: &Repo,
    remote: &str,
) -> Result<Vetted, Failure> {
    let op = GitOp::GetUrl {
        remote: remote.to_owned(),
    };
    let out = git(tools, call, repo, &op).await?;
    let url = text(&out.stdout);
    let url = parse(tools, url.trim())?;
    // The decision judged the remote as the repository named it when the
    // call was prepared; a repository edited since (by the agent's file
    // tools, or a call running beside this one) must not send the call
    // elsewhere.
    if let Some(judged) = call.remote
        && url.to_string() != judged
    {
        return Err(Failure::new(
            ErrorType::PermissionDenied,
            "remote_changed",
            format!(
                "remote `{remote}` points at `{url}` now, not at `{judged}`, the URL this call was \
                 judged for; nothing was fetched or pushed. Call again to have the new URL judged"
            ),
        ));
    }
    vetted(tools, &url).await
}

/// Runs a fetch or push: the config checked again right before it.
async fn remote_op(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    repo: &Repo,
    vetted: &Vetted,
    op: &GitOp,
) -> Result<crate::docker::ExecOutput, Failure> {
    let config = repo.check()?;
    let ws = repo.workspace(&config, &call.context.agent)?;
    let inv = git_argv(op, Some(vetted), &ws).map_err(|e| Failure::args(e.to_string()))?;
    let out = network(tools, call, vetted, argv(&inv), None).await?;
    succeeded(op, out)
}

/// `[sandbox.git]`'s remote rules; a bad host name is a config error at
/// start, naming the key.
pub(crate) fn net_policy(git: &GitSettings) -> Result<GitNetPolicy, SandboxError> {
    let mut policy = GitNetPolicy::new().allow_insecure_http(git.insecure_http);
    for host in &git.allow_hosts {
        policy = policy
            .allow_host(host)
            .map_err(|e| SandboxError::GitConfig {
                key: "allow-hosts",
                reason: format!("`{host}`: {e}"),
            })?;
    }
    Ok(policy)
}

fn parse(tools: &SandboxTools, url: &str) -> Result<GitUrl, Failure> {
    parse_git_url_with(url, &tools.git_policy)
        .map_err(|e| Failure::new(ErrorType::PermissionDenied, "url_refused", e.to_string()))
}

async fn vetted(tools: &SandboxTools, url: &GitUrl) -> Result<Vetted, Failure> {
    vet(url, &tools.git_policy, tools.git_dns.as_ref())
        .await
        .map_err(|e| match e {
            warden_vcs::VetError::Resolve { .. } | warden_vcs::VetError::NoAddress { .. } => {
                Failure::new(ErrorType::ToolError, "dns_failed", e.to_string())
            }
            e => Failure::new(
                ErrorType::PermissionDenied,
                "address_refused",
                e.to_string(),
            ),
        })
}

/// Runs `cmd` in a git container of its own whose egress reaches only the
/// vetted addresses at the URL's port.
async fn network(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    vetted: &Vetted,
    cmd: Vec<String>,
    scratch_mb: Option<u64>,
) -> Result<crate::docker::ExecOutput, Failure> {
    let port = vetted.url().port();
    let net = vetted
        .addrs()
        .iter()
        .map(|ip| pattern(*ip, port))
        .collect::<Result<Vec<_>, _>>()?;
    let mut fenced = Grants {
        net,
        ..call.grants.clone()
    };
    if vetted.url().transport() == Transport::Ssh {
        let Some(known) = &tools.config.git.known_hosts else {
            return Err(Failure::new(
                ErrorType::PermissionDenied,
                "ssh_not_configured",
                "ssh remotes need a Warden-managed known_hosts file: set `[sandbox.git] known-hosts`",
            ));
        };
        // After the workspace grant, which stays the first.
        fenced.fs.push(FsGrant {
            host_path: known.clone(),
            guest_path: KNOWN_HOSTS.to_owned(),
            access: FsAccess::Read,
        });
    }
    let asked = call
        .args
        .get("timeout_secs")
        .and_then(Value::as_u64)
        .unwrap_or(tools.config.git.deadline_secs);
    let timeout = Duration::from_secs(asked.min(tools.config.max_timeout_secs).max(1))
        .min(call.limits.deadline);
    let place = Place {
        kind: ImageKind::Git,
        grants: &fenced,
        own_container: true,
        scratch_mb,
        timeout,
        read_only: false,
    };
    Ok(tools.run_in(call, &place, cmd, None, None).await?.output)
}

/// An egress grant for exactly `ip` and `port`.
fn pattern(ip: IpAddr, port: u16) -> Result<NetPattern, Failure> {
    let text = match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    };
    text.parse().map_err(|e| {
        Failure::new(
            ErrorType::HostError,
            "sandbox_error",
            format!("egress rule `{text}`: {e}"),
        )
    })
}

fn addrs(v: &Vetted) -> Vec<String> {
    v.addrs().iter().map(ToString::to_string).collect()
}

/// What git (and curl under it) print when a write fails: the scratch
/// tmpfs is the only place a clone writes, so a write failure is the quota.
const WRITE_FAILED: &[&str] = &[
    "No space left on device",
    "unable to write",
    "write error",
    "curl_result = 23",
];

/// A clone that ran out of space says which limit it met.
fn quota_hint(f: Failure, quota_mb: u64) -> Failure {
    if WRITE_FAILED.iter().any(|w| f.message.contains(w)) {
        return Failure::new(
            ErrorType::LimitExceeded,
            "quota_exceeded",
            format!(
                "the clone is larger than the git disk quota ({quota_mb} MiB, `[sandbox.git] quota-mb`); nothing was written to the workspace. {}",
                f.message
            ),
        );
    }
    f
}
