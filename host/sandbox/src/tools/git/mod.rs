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
use warden_api::{BackendCall, VcsOperation};
use warden_vcs::{GitNetPolicy, parse_git_url_with};

use super::{Outcome, SandboxTools};

/// What a call of git tool `tool` with `args` does to a repository (the
/// git level and the force-push breaker judge it). `None` for other tools.
/// A clone whose URL passes the validator and names a host `git` (from
/// `[sandbox.git] allow-hosts`) allowlists is a
/// [`VcsOperation::FetchAllowlisted`]; the clone itself vets that same URL.
pub(super) fn operation(tool: &str, args: &Value, git: &GitNetPolicy) -> Option<VcsOperation> {
    use VcsOperation::*;
    Some(match tool {
        "git_status" | "git_log" | "git_diff" | "git_show" => Read,
        "git_branch" => match args.get("op").and_then(Value::as_str) {
            Some("list") => Read,
            Some("create" | "switch") => Branch,
            // Anything else is refused by the tool; judged as the furthest.
            _ => BranchDelete,
        },
        "git_commit" => Commit,
        "git_restore" | "git_reset" => Discard,
        "git_clone" => match args.get("url").and_then(Value::as_str) {
            Some(url) if parse_git_url_with(url, git).is_ok_and(|u| git.allows_host(u.host())) => {
                FetchAllowlisted
            }
            _ => Fetch,
        },
        "git_fetch" => Fetch,
        "git_push" => match args.get("force") {
            Some(Value::Bool(false)) | None => Push,
            _ => ForcePush,
        },
        _ => return None,
    })
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
