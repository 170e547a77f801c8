//! The `git_*` tools: git in the Docker sandbox, every invocation built by
//! `warden-vcs`.
//!
//! Attack: git as a way out of the sandbox's rules. A repository's config
//! or the environment running programs (hooks, fsmonitor, filters,
//! external diff, pagers, credential helpers), a remote URL reaching an
//! internal address (loopback, private ranges, cloud metadata) directly,
//! through DNS rebinding, a redirect, a proxy or a rewritten URL, a
//! submodule fetching more, a clone filling the disk or never ending.
//! Each call: the repository's config is checked against the allowlist
//! first ([`repo`]); git runs with an argv and a complete environment from
//! `warden_vcs::git_argv` (neutralising `-c` options, `env -i`, values
//! after `--end-of-options`); local operations run in the agent's git
//! container with no network; network operations ([`remote`]) vet the
//! URL and every resolved address, pin git to them, and run in a
//! container of their own whose egress reaches only those addresses,
//! under a deadline and a disk quota.

mod args;
mod dns;
mod local;
mod parse;
mod remote;
mod repo;
pub(in crate::tools) mod specs;

pub use dns::SystemDns;
pub(super) use remote::net_policy;

use serde_json::Value;
use warden_api::{BackendCall, Grants, VcsFacts, VcsOperation};
use warden_vcs::{GitNetPolicy, parse_git_url_with};

use super::{Outcome, SandboxTools};

/// What a call of git tool `tool` with `args` does to a repository (the
/// git level, the network sub-constraint and the force-push breaker judge
/// it), and the remote it reaches. `None` for other tools.
///
/// A clone's remote is its URL; a fetch's or push's is read now, when the
/// call is prepared, from the repository's config under `grants` (after
/// the config check: nothing rewrites it), and the call later reaches
/// exactly that URL or is refused ([`remote`]). A clone or fetch whose
/// URL passes the validator and names a host `git` (from `[sandbox.git]
/// allow-hosts`) allowlists is a [`VcsOperation::FetchAllowlisted`].
/// Without `grants` (a described call) a fetch's or push's remote is
/// unknown and a fetch is judged as from anywhere.
pub(super) fn operation(
    tool: &str,
    args: &Value,
    git: &GitNetPolicy,
    grants: Option<&Grants>,
) -> Option<VcsFacts> {
    use VcsOperation::*;
    let op = match tool {
        "git_status" | "git_log" | "git_diff" | "git_show" => Read,
        "git_branch" => match args.get("op").and_then(Value::as_str) {
            Some("list") => Read,
            Some("create" | "switch") => Branch,
            // Anything else is refused by the tool; judged as the furthest.
            _ => BranchDelete,
        },
        "git_commit" => Commit,
        "git_restore" | "git_reset" => Discard,
        "git_clone" => {
            let url = args.get("url").and_then(Value::as_str);
            return Some(fetch(url.map(str::to_owned), git));
        }
        "git_fetch" => return Some(fetch(configured(args, grants), git)),
        "git_push" => {
            let op = match args.get("force") {
                Some(Value::Bool(false)) | None => Push,
                _ => ForcePush,
            };
            return Some(with_remote(op, configured(args, grants), git));
        }
        _ => return None,
    };
    Some(VcsFacts::local(op))
}

/// A clone or fetch from `url`: from an allowlisted host or not.
fn fetch(url: Option<String>, git: &GitNetPolicy) -> VcsFacts {
    let allowlisted = url
        .as_deref()
        .and_then(|u| parse_git_url_with(u, git).ok())
        .is_some_and(|u| git.allows_host(u.host()));
    let op = if allowlisted {
        VcsOperation::FetchAllowlisted
    } else {
        VcsOperation::Fetch
    };
    with_remote(op, url, git)
}

/// `op` reaching `url` when it passes the validator (canonical form and
/// host); else reaching nothing known.
fn with_remote(op: VcsOperation, url: Option<String>, git: &GitNetPolicy) -> VcsFacts {
    match url.as_deref().map(|u| parse_git_url_with(u, git)) {
        Some(Ok(url)) => VcsFacts {
            operation: op,
            remote: Some(url.to_string()),
            remote_host: Some(url.host_text()),
        },
        _ => VcsFacts::local(op),
    }
}

/// The URL the repository `args` name configures for its `remote`, read
/// host-side after the config check; `None` when anything is amiss (the
/// call itself then reports it).
fn configured(args: &Value, grants: Option<&Grants>) -> Option<String> {
    let rel = args.get("repo").and_then(Value::as_str);
    let remote = args.get("remote").and_then(Value::as_str)?;
    let repo = repo::Repo::in_grants(grants?, rel, false).ok()?;
    let config = repo.check().ok()?;
    repo::Repo::remote_url(&config, remote)
}

/// Runs one git tool call.
pub(super) async fn call(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    match call.tool.name.as_str() {
        "git_clone" => remote::clone(tools, call).await,
        "git_fetch" => remote::fetch(tools, call).await,
        "git_push" => remote::push(tools, call).await,
        _ => local::call(tools, call).await,
    }
}

#[cfg(test)]
mod tests;
