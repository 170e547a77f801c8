//! The git operations that stay in the repository: status, log, diff,
//! show, branch, commit, restore, reset. They run in the agent's warm git
//! container, created with no network whatever the sandbox's grants.

use serde_json::{Value, json};
use warden_api::{BackendCall, ErrorType, Grants};
use warden_vcs::{GitOp, Invocation, ResetMode, git_argv};

use super::args::{flag, opt_str, opt_u32, str_arg, strings};
use super::parse::{self, Malformed};
use super::repo::Repo;
use crate::docker::ExecOutput;
use crate::images::ImageKind;
use crate::tools::{Failure, Outcome, Place, SandboxTools, text};

/// stderr kept in an error message.
const MAX_STDERR: usize = 8 << 10;

pub(super) async fn call(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let repo_arg = opt_str(call, "repo")?;
    match call.tool.name.as_str() {
        "git_status" => {
            let repo = Repo::at(call, repo_arg, false)?;
            let op = GitOp::Status {
                paths: strings(call, "paths")?,
            };
            let out = structured(git(tools, call, &repo, &op).await?)?;
            parse::status(&out.stdout).map_err(malformed)
        }
        "git_log" => {
            let repo = Repo::at(call, repo_arg, false)?;
            let op = GitOp::Log {
                rev: opt_str(call, "rev")?.map(str::to_owned),
                max_count: opt_u32(call, "max_count")?.unwrap_or(50),
                paths: strings(call, "paths")?,
            };
            let out = structured(git(tools, call, &repo, &op).await?)?;
            Ok(json!({"commits": parse::log(&out.stdout).map_err(malformed)?}))
        }
        "git_diff" => {
            let repo = Repo::at(call, repo_arg, false)?;
            let op = GitOp::Diff {
                from: opt_str(call, "from")?.map(str::to_owned),
                to: opt_str(call, "to")?.map(str::to_owned),
                staged: flag(call, "staged")?,
                paths: strings(call, "paths")?,
            };
            let out = git(tools, call, &repo, &op).await?;
            Ok(json!({"patch": text(&out.stdout), "truncated": out.truncated()}))
        }
        "git_show" => {
            let repo = Repo::at(call, repo_arg, false)?;
            let op = GitOp::Show {
                rev: str_arg(call, "rev")?.to_owned(),
            };
            let out = git(tools, call, &repo, &op).await?;
            let mut v = parse::show(&out.stdout).map_err(malformed)?;
            v["truncated"] = json!(out.truncated());
            Ok(v)
        }
        "git_branch" => branch(tools, call, repo_arg).await,
        "git_commit" => {
            let repo = Repo::at(call, repo_arg, true)?;
            on_branch(tools, call, &repo, str_arg(call, "branch")?).await?;
            let add = GitOp::Add {
                paths: strings(call, "paths")?,
            };
            git(tools, call, &repo, &add).await?;
            let commit = GitOp::Commit {
                message: str_arg(call, "message")?.to_owned(),
            };
            git(tools, call, &repo, &commit).await?;
            Ok(json!({"commit": head(tools, call, &repo).await?}))
        }
        "git_restore" => {
            let repo = Repo::at(call, repo_arg, true)?;
            let paths = strings(call, "paths")?;
            let op = GitOp::Restore {
                paths: paths.clone(),
                staged: flag(call, "staged")?,
                source: opt_str(call, "source")?.map(str::to_owned),
            };
            git(tools, call, &repo, &op).await?;
            Ok(json!({"restored": paths}))
        }
        "git_reset" => {
            let repo = Repo::at(call, repo_arg, true)?;
            let mode = match str_arg(call, "mode")? {
                "soft" => ResetMode::Soft,
                "mixed" => ResetMode::Mixed,
                "hard" => ResetMode::Hard,
                "keep" => ResetMode::Keep,
                other => {
                    return Err(Failure::args(format!(
                        "`mode` `{other}` is not soft, mixed, hard or keep"
                    )));
                }
            };
            let op = GitOp::Reset {
                mode,
                rev: str_arg(call, "rev")?.to_owned(),
            };
            git(tools, call, &repo, &op).await?;
            Ok(json!({"head": head(tools, call, &repo).await?}))
        }
        other => Err(Failure::new(
            ErrorType::UnknownTool,
            "not_found",
            format!("the sandbox has no git tool `{other}`"),
        )),
    }
}

async fn branch(tools: &SandboxTools, call: &BackendCall<'_>, repo_arg: Option<&str>) -> Outcome {
    let op_name = str_arg(call, "op")?;
    let name = || {
        str_arg(call, "name")
            .map(str::to_owned)
            .map_err(|_| Failure::args(format!("`name` is required to {op_name} a branch")))
    };
    let op = match op_name {
        "list" => GitOp::BranchList,
        "create" => GitOp::BranchCreate {
            name: name()?,
            start: opt_str(call, "start")?.map(str::to_owned),
        },
        "switch" => GitOp::Switch {
            name: name()?,
            create: false,
        },
        "delete" => GitOp::BranchDelete {
            name: name()?,
            force: flag(call, "force")?,
        },
        other => {
            return Err(Failure::args(format!(
                "`op` `{other}` is not list, create, switch or delete"
            )));
        }
    };
    let repo = Repo::at(call, repo_arg, op != GitOp::BranchList)?;
    let out = git(tools, call, &repo, &op).await?;
    if op == GitOp::BranchList {
        let out = structured(out)?;
        return Ok(json!({"branches": parse::branches(&out.stdout).map_err(malformed)?}));
    }
    let listed = structured(git(tools, call, &repo, &GitOp::BranchList).await?)?;
    Ok(json!({"op": op_name, "branches": parse::branches(&listed.stdout).map_err(malformed)?}))
}

/// The commit HEAD names now, as a log record.
/// Refuses unless `HEAD` is on `branch`: the decision was made for a
/// commit to the branch the call names (its specifier), so a commit must
/// not land on another one.
async fn on_branch(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    repo: &Repo,
    branch: &str,
) -> Result<(), Failure> {
    let refused = |detail: String| {
        Failure::new(
            ErrorType::PermissionDenied,
            "branch_mismatch",
            format!(
                "the commit was asked for branch `{branch}`, but {detail}; switch to it with `git_branch` first or name the branch HEAD is on"
            ),
        )
    };
    match git(tools, call, repo, &GitOp::CurrentBranch).await {
        Ok(out) => {
            let current = text(&out.stdout);
            let current = current.trim_end_matches('\n');
            if current == branch {
                Ok(())
            } else {
                Err(refused(format!("HEAD is on `{current}`")))
            }
        }
        Err(f) if f.code == "git_failed" => Err(refused("HEAD is detached".to_owned())),
        Err(f) => Err(f),
    }
}

async fn head(tools: &SandboxTools, call: &BackendCall<'_>, repo: &Repo) -> Result<Value, Failure> {
    let op = GitOp::Log {
        rev: None,
        max_count: 1,
        paths: Vec::new(),
    };
    let out = structured(git(tools, call, repo, &op).await?)?;
    parse::log(&out.stdout)
        .map_err(malformed)?
        .into_iter()
        .next()
        .ok_or_else(|| Failure::new(ErrorType::ToolError, "git_failed", "HEAD names no commit"))
}

/// Checks the repository's config, then runs `op` in the agent's git
/// container (no network); a non-zero exit is an error with git's stderr.
pub(super) async fn git(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    repo: &Repo,
    op: &GitOp,
) -> Result<ExecOutput, Failure> {
    let config = repo.check()?;
    let ws = repo.workspace(&config, &call.context.agent)?;
    let inv = git_argv(op, None, &ws).map_err(|e| Failure::args(e.to_string()))?;
    let offline = Grants {
        net: Vec::new(),
        ..call.grants.clone()
    };
    let place = Place {
        kind: ImageKind::Git,
        grants: &offline,
        own_container: false,
        scratch_mb: None,
        timeout: tools.timeout(call),
        read_only: false,
    };
    let out = tools.run_in(call, &place, argv(&inv), None, None).await?;
    succeeded(op, out.output)
}

/// The invocation as `docker exec` runs it: behind `env -i`, so nothing
/// of the container's environment reaches git.
pub(super) fn argv(inv: &Invocation) -> Vec<String> {
    inv.env_i_argv()
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// `out` when git exited 0, else an error carrying its stderr.
pub(super) fn succeeded(op: &GitOp, out: ExecOutput) -> Result<ExecOutput, Failure> {
    if out.exit_code == Some(0) {
        return Ok(out);
    }
    let stderr = text(&out.stderr);
    let start = stderr.len().saturating_sub(MAX_STDERR);
    let start = (start..stderr.len())
        .find(|&i| stderr.is_char_boundary(i))
        .unwrap_or(stderr.len());
    Err(Failure::new(
        ErrorType::ToolError,
        "git_failed",
        format!(
            "git {} failed (exit code {:?}): {}",
            op.name(),
            out.exit_code,
            stderr[start..].trim()
        ),
    ))
}

/// Output a parser reads must be whole.
fn structured(out: ExecOutput) -> Result<ExecOutput, Failure> {
    if out.truncated() {
        return Err(Failure::new(
            ErrorType::LimitExceeded,
            "output_too_large",
            format!(
                "git's output ({} bytes) is larger than the sandbox's max-output-bytes; narrow it (paths, max_count)",
                out.stdout_total
            ),
        ));
    }
    Ok(out)
}

fn malformed(m: Malformed) -> Failure {
    Failure::new(ErrorType::ToolError, "git_output", m.0)
}
