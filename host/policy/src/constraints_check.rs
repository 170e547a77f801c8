//! Sub-constraints applied to one call: file scope, network, terminal,
//! git and code execution. Each returns a decision only when it stops or
//! escalates the call.

use warden_shell::text_path::is_within;

use crate::Isolation;
use crate::constraints::{CodeExecution, FileScope, GitAccess, NetworkMode, TerminalAccess};
use crate::decision::{Decision, Layer};
use crate::engine::AgentPolicy;
use crate::facts::{Call, Env};
use crate::glob;
use crate::specifier::Prepared;
use crate::vcs::VcsOp;

pub(crate) fn check(
    agent: &AgentPolicy,
    call: &Call<'_>,
    prepared: &Prepared<'_>,
    env: &Env<'_>,
) -> Option<Decision> {
    let c = agent.constraints.as_ref()?;
    let name = call.tool.normalized_name();
    let id = &agent.id;
    if let Prepared::Path { paths, .. } = prepared {
        let (scope, dir) = match c.file_scope {
            FileScope::WorkspaceOnly => ("workspace-only", env.workspace),
            FileScope::ProjectDirectory => ("project-directory", env.project),
            FileScope::Full => ("full", "/"),
        };
        if let Some(outside) = paths.iter().find(|p| !is_within(p, dir)) {
            return Some(Decision::deny(
                Layer::Constraint,
                format!("agent `{id}` has file scope {scope}: `{outside}` is outside `{dir}`"),
            ));
        }
    }
    if c.terminal == TerminalAccess::RestrictedCommands
        && let Prepared::Shell { line, .. } = prepared
        && let Some(program) = line.runs_any(&|p| c.restricted_commands.iter().any(|r| r == p))
    {
        return Some(Decision::deny(
            Layer::Constraint,
            format!(
                "agent `{id}` has restricted-commands terminal access and `{program}` is a restricted command \
                 (`{name}`); raise the agent's terminal access to `full`, or take `{program}` off its \
                 restricted-commands list"
            ),
        ));
    }
    match call.tool.category {
        "web" | "external-data" | "browser" => {
            let host = match prepared {
                Prepared::Plain(text) => host_of(text),
                _ => None,
            };
            network(agent, c.network, host, &name)
        }
        "terminal" if c.terminal == TerminalAccess::None => Some(Decision::deny(
            Layer::Constraint,
            format!(
                "agent `{id}` has no terminal access; raise its terminal access to use `{name}`"
            ),
        )),
        "version-control" => {
            let op = call.tool.vcs_op()?;
            if !op.permitted_at(c.git) {
                return Some(Decision::deny(
                    Layer::Constraint,
                    format!(
                        "agent `{id}` has {} git access and `{name}` {}; that needs {} git access \
                         (raise the agent's `git` sub-constraint)",
                        git_access_name(c.git),
                        op.describe(),
                        op.permitted_levels()
                    ),
                ));
            }
            if !op.reaches_remote() {
                return None;
            }
            // The host the backend vetted; a clone's URL is its specifier
            // too, while a fetch's or push's names only a remote, which
            // says nothing about where it points.
            let host =
                call.remote_host
                    .map(str::to_ascii_lowercase)
                    .or_else(|| match (op, prepared) {
                        (VcsOp::Fetch | VcsOp::FetchAllowlisted, Prepared::Plain(text))
                            if call.tool.action_type == "vcs:read" && is_url(text) =>
                        {
                            host_of(text)
                        }
                        _ => None,
                    });
            network(agent, c.network, host, &name)
        }
        "code-execution" => match (c.code_execution, call.tool.isolation) {
            (_, Isolation::Host) => Some(Decision::deny(
                Layer::Constraint,
                format!(
                    "agent `{id}` may run code only in a sandbox (`code-execution`) and `{name}` \
                     runs as a process of the host"
                ),
            )),
            (CodeExecution::Container, Isolation::Wasm) => Some(Decision::deny(
                Layer::Constraint,
                format!(
                    "agent `{id}` may run code only in a container (`code-execution = \"container\"`) \
                     and `{name}` runs in a WebAssembly instance"
                ),
            )),
            (CodeExecution::Sandboxed, _) | (CodeExecution::Container, Isolation::Container) => {
                None
            }
        },
        _ => None,
    }
}

fn git_access_name(access: GitAccess) -> &'static str {
    match access {
        GitAccess::LocalOnly => "`local-only`",
        GitAccess::ReadAndBranch => "`read-and-branch`",
        GitAccess::Full => "`full`",
    }
}

fn network(
    agent: &AgentPolicy,
    mode: NetworkMode,
    host: Option<String>,
    name: &str,
) -> Option<Decision> {
    let id = &agent.id;
    match mode {
        NetworkMode::Open => None,
        NetworkMode::None => Some(Decision::deny(
            Layer::Constraint,
            format!("agent `{id}` has no network access; `{name}` needs it"),
        )),
        NetworkMode::AllowlistOnly => match host {
            Some(h)
                if agent
                    .network_allowlist
                    .iter()
                    .any(|a| glob::matches(&a.to_ascii_lowercase(), &h)) =>
            {
                None
            }
            Some(h) => Some(Decision::deny(
                Layer::Constraint,
                format!(
                    "agent `{id}` may reach only allowlisted hosts and `{h}` is not on its network-allowlist"
                ),
            )),
            None => Some(Decision::deny(
                Layer::Constraint,
                format!("agent `{id}` may reach only allowlisted hosts and `{name}` names no host"),
            )),
        },
    }
}

/// Whether a clone's specifier is a URL git would read as one (a scheme,
/// or scp-like `[user@]host:path`), not a bare remote name.
fn is_url(text: &str) -> bool {
    text.contains("://") || text.split_once(':').is_some_and(|(h, _)| !h.contains('/'))
}

/// The host of a URL-ish specifier (`scheme://[user@]host[:port]/...` or
/// `host[:port]/...`), lower-cased.
fn host_of(text: &str) -> Option<String> {
    let rest = text.split_once("://").map_or(text, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn hosts() {
        assert_eq!(
            host_of("https://API.example.com:443/x").as_deref(),
            Some("api.example.com")
        );
        assert_eq!(
            host_of("https://user@evil.com@good.com/").as_deref(),
            Some("good.com")
        );
        assert_eq!(host_of("example.org/path").as_deref(), Some("example.org"));
        assert_eq!(host_of("http://[::1]:80/").as_deref(), Some("::1"));
        assert_eq!(host_of("").as_deref(), None);
    }
}
