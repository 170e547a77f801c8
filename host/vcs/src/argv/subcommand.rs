//! The subcommand part of each invocation: fixed options first (external
//! diff, textconv, signatures, hooks and submodules off), then
//! `--end-of-options` or `--` before any value an agent supplied.

use super::op::{GitOp, LOG_FORMAT};
use super::values;
use crate::error::ArgError;
use crate::vet::Vetted;

fn push_paths(args: &mut Vec<String>, paths: &[String]) -> Result<(), ArgError> {
    args.push("--".into());
    for p in paths {
        args.push(values::path(p)?.to_owned());
    }
    Ok(())
}

pub(super) fn subcommand(
    op: &GitOp,
    vetted: Option<&Vetted>,
    args: &mut Vec<String>,
) -> Result<(), ArgError> {
    let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
    match op {
        GitOp::Status { paths } => {
            push(&[
                "status",
                "--porcelain=v2",
                "-z",
                "--branch",
                "--untracked-files=normal",
                "--ignore-submodules=all",
            ]);
            push_paths(args, paths)
        }
        GitOp::Log {
            rev,
            max_count,
            paths,
        } => {
            if *max_count == 0 || *max_count > 10_000 {
                return Err(ArgError::Invalid {
                    what: "log count",
                    value: max_count.to_string(),
                    reason: "must be 1 to 10000",
                });
            }
            let rev = values::rev(rev.as_deref().unwrap_or("HEAD"))?;
            let count = format!("--max-count={max_count}");
            push(&[
                "log",
                "--no-color",
                "--no-show-signature",
                "--no-ext-diff",
                "--no-textconv",
                LOG_FORMAT,
                &count,
                "--end-of-options",
                rev,
            ]);
            push_paths(args, paths)
        }
        GitOp::Diff {
            from,
            to,
            staged,
            paths,
        } => {
            push(&[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--ignore-submodules=all",
            ]);
            if *staged {
                push(&["--cached"]);
            }
            push(&["--end-of-options"]);
            for r in [from, to].into_iter().flatten() {
                push(&[values::rev(r)?]);
            }
            push_paths(args, paths)
        }
        GitOp::Show { rev } => {
            let rev = values::rev(rev)?;
            push(&[
                "show",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--no-show-signature",
                LOG_FORMAT,
                "--end-of-options",
                rev,
                "--",
            ]);
            Ok(())
        }
        GitOp::BranchList => {
            push(&[
                "branch",
                "--list",
                "--no-color",
                "--format=%(refname:short)%00%(objectname)%00%(HEAD)",
            ]);
            Ok(())
        }
        GitOp::BranchCreate { name, start } => {
            push(&[
                "branch",
                "--no-track",
                "--end-of-options",
                values::branch(name)?,
            ]);
            if let Some(start) = start {
                push(&[values::rev(start)?]);
            }
            Ok(())
        }
        GitOp::Switch { name, create } => {
            let name = values::branch(name)?;
            if *create {
                push(&["switch", "--no-guess", &format!("--create={name}")]);
            } else {
                push(&["switch", "--no-guess", "--end-of-options", name]);
            }
            Ok(())
        }
        GitOp::BranchDelete { name, force } => {
            push(&[
                "branch",
                if *force { "-D" } else { "-d" },
                "--end-of-options",
                values::branch(name)?,
            ]);
            Ok(())
        }
        GitOp::Add { paths } => {
            push(&["add"]);
            if paths.is_empty() {
                push(&["--all"]);
            }
            push_paths(args, paths)
        }
        GitOp::Commit { message } => {
            let message = format!("--message={}", values::message(message)?);
            push(&["commit", "--no-verify", "--no-gpg-sign", &message]);
            Ok(())
        }
        GitOp::Restore {
            paths,
            staged,
            source,
        } => {
            if paths.is_empty() {
                return Err(ArgError::Invalid {
                    what: "restore paths",
                    value: String::new(),
                    reason: "name at least one path",
                });
            }
            push(&["restore", "--no-overlay"]);
            push(&[if *staged { "--staged" } else { "--worktree" }]);
            if let Some(source) = source {
                push(&[&format!("--source={}", values::rev(source)?)]);
            }
            push_paths(args, paths)
        }
        GitOp::Reset { mode, rev } => {
            let mode = format!("--{}", mode.as_str());
            // git 2.39's reset refuses `--end-of-options` here; the
            // revision cannot start with `-` and `--` ends it.
            push(&["reset", &mode, values::rev(rev)?, "--"]);
            Ok(())
        }
        GitOp::Clone { dest, depth } => {
            let url = network_url(op, vetted)?;
            push(&[
                "clone",
                "--no-recurse-submodules",
                "--template=",
                "--no-local",
            ]);
            if let Some(depth) = depth {
                push(&[&format!("--depth={depth}")]);
            }
            push(&["--", &url, values::dest(dest)?]);
            Ok(())
        }
        GitOp::Fetch { remote } => {
            let url = network_url(op, vetted)?;
            let refspec = format!("+refs/heads/*:refs/remotes/{}/*", values::remote(remote)?);
            push(&[
                "fetch",
                "--no-recurse-submodules",
                "--no-write-fetch-head",
                "--",
                &url,
                &refspec,
            ]);
            Ok(())
        }
        GitOp::Push {
            remote,
            branch,
            force,
        } => {
            values::remote(remote)?;
            let url = network_url(op, vetted)?;
            let branch = values::branch(branch)?;
            let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
            push(&["push", "--no-verify", "--recurse-submodules=no"]);
            if *force {
                push(&["--force"]);
            }
            push(&["--", &url, &refspec]);
            Ok(())
        }
        GitOp::CurrentBranch => {
            push(&["symbolic-ref", "--quiet", "--short", "HEAD"]);
            Ok(())
        }
        GitOp::GetUrl { remote } => {
            push(&["ls-remote", "--get-url", "--", values::remote(remote)?]);
            Ok(())
        }
    }
}

fn network_url(op: &GitOp, vetted: Option<&Vetted>) -> Result<String, ArgError> {
    vetted
        .map(|v| v.url().to_string())
        .ok_or(ArgError::MissingVetted { op: op.name() })
}
