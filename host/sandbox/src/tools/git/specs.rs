//! The specs of the `git_*` tools: each with its action type and the
//! specifier rules name (`git_push(origin:main)`, `git_branch(delete:old)`).
//! What a call does to the repository (the operation the git level
//! judges) is declared per call by [`super::operation`].

use serde_json::{Value, json};
use warden_api::Category;

use crate::tools::specs::{Def, object, timeout};

fn repo() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 512,
           "description": "the repository's directory, relative to the workspace (default: the workspace itself)"})
}

fn paths() -> Value {
    json!({"type": "array", "maxItems": 256,
           "items": {"type": "string", "minLength": 1, "maxLength": 1024},
           "description": "pathspecs relative to the repository, read literally (no globs)"})
}

fn rev(what: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 256, "description": what})
}

/// A commit as log, show, commit and reset report it.
fn record() -> Value {
    json!({"type": "object", "required": ["hash", "parents", "author", "date", "subject"], "properties": {
        "hash": {"type": "string"},
        "parents": {"type": "array", "items": {"type": "string"}},
        "author": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}}},
        "date": {"type": "string", "description": "ISO 8601, author date"},
        "subject": {"type": "string"}
    }})
}

fn branches() -> Value {
    json!({"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "commit": {"type": "string"}, "current": {"type": "boolean"}
    }}})
}

fn result(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

fn status_result() -> Value {
    result(
        json!({
            "branch": {"type": "object", "properties": {
                "head": {"type": ["string", "null"], "description": "null when detached"},
                "oid": {"type": ["string", "null"], "description": "null before the first commit"},
                "upstream": {"type": "string"},
                "ahead": {"type": "integer"}, "behind": {"type": "integer"}
            }},
            "entries": {"type": "array", "items": {"type": "object", "properties": {
                "kind": {"type": "string", "enum": ["changed", "renamed", "unmerged", "untracked", "ignored"]},
                "index": {"type": "string", "description": "X of porcelain v2's XY (`.` unchanged)"},
                "worktree": {"type": "string", "description": "Y of porcelain v2's XY"},
                "path": {"type": "string"},
                "orig_path": {"type": "string"},
                "score": {"type": "string"}
            }}},
            "clean": {"type": "boolean"}
        }),
        &["branch", "entries", "clean"],
    )
}

fn remote_result() -> Value {
    result(
        json!({"remote": {"type": "string"}, "url": {"type": "string"}, "stderr": {"type": "string"}}),
        &["url"],
    )
}

#[allow(
    clippy::too_many_arguments,
    reason = "one row of the tool table; named at the call site by position like the table in the spec"
)]
fn def(
    name: &'static str,
    summary: &'static str,
    description: &'static str,
    action: &'static str,
    params: Value,
    required: &[&str],
    side_effect: bool,
    specifier: Option<&'static str>,
    example: Value,
    result: Value,
) -> Def {
    Def {
        name,
        summary,
        description,
        category: Category::VersionControl,
        action,
        params: object(params, required),
        result,
        side_effect,
        specifier,
        example,
    }
}

const LOCAL: &str = "Runs git in the agent's git container (no network). The repository's own \
config is checked first: only known-harmless keys are accepted (a hook path, fsmonitor, filter, \
external diff, include, proxy or URL rewrite is refused, naming the key).";

/// Every git tool.
pub(in crate::tools) fn defs() -> Vec<Def> {
    vec![
        def(
            "git_status",
            "Show the working tree status (parsed porcelain v2)",
            LOCAL,
            "vcs:read",
            json!({"repo": repo(), "paths": paths()}),
            &[],
            false,
            Some("{repo}"),
            json!({}),
            status_result(),
        ),
        def(
            "git_log",
            "List commits as records (hash, parents, author, date, subject)",
            LOCAL,
            "vcs:read",
            json!({"repo": repo(), "rev": rev("where to start (default HEAD)"),
                   "max_count": {"type": "integer", "minimum": 1, "maximum": 10000},
                   "paths": paths()}),
            &[],
            false,
            Some("{rev}"),
            json!({"max_count": 10}),
            result(
                json!({"commits": {"type": "array", "items": record()}}),
                &["commits"],
            ),
        ),
        def(
            "git_diff",
            "Show changes between the worktree, the index and commits",
            LOCAL,
            "vcs:read",
            json!({"repo": repo(), "from": rev("first revision"), "to": rev("second revision"),
                   "staged": {"type": "boolean", "description": "the index against HEAD"},
                   "paths": paths()}),
            &[],
            false,
            Some("{from}"),
            json!({"staged": true}),
            result(
                json!({"patch": {"type": "string"}, "truncated": {"type": "boolean"}}),
                &["patch", "truncated"],
            ),
        ),
        def(
            "git_show",
            "Show one commit: its record and patch",
            LOCAL,
            "vcs:read",
            json!({"repo": repo(), "rev": rev("the commit")}),
            &["rev"],
            false,
            Some("{rev}"),
            json!({"rev": "HEAD"}),
            result(
                json!({"commit": record(), "patch": {"type": "string"}, "truncated": {"type": "boolean"}}),
                &["commit", "patch"],
            ),
        ),
        def(
            "git_branch",
            "List, create, switch or delete local branches",
            LOCAL,
            "vcs:branch",
            json!({"repo": repo(),
                   "op": {"type": "string", "enum": ["list", "create", "switch", "delete"]},
                   "name": {"type": "string", "minLength": 1, "maxLength": 256},
                   "start": rev("start point of a new branch (default HEAD)"),
                   "force": {"type": "boolean", "description": "delete even if not merged"}}),
            &["op"],
            true,
            Some("{op}:{name}"),
            json!({"op": "create", "name": "feat/parser"}),
            result(
                json!({"op": {"type": "string"}, "branches": branches()}),
                &["branches"],
            ),
        ),
        def(
            "git_commit",
            "Stage paths (everything when none) and commit them with a message",
            LOCAL,
            "vcs:commit",
            json!({"repo": repo(), "paths": paths(),
                   "branch": {"type": "string", "minLength": 1, "maxLength": 255,
                              "description": "the branch HEAD is on, which the commit goes to (refused when HEAD is elsewhere)"},
                   "message": {"type": "string", "minLength": 1, "maxLength": 65536}}),
            &["branch", "message"],
            true,
            Some("{branch}"),
            json!({"branch": "fix/parser", "message": "Fix the parser's off-by-one"}),
            result(json!({"commit": record()}), &["commit"]),
        ),
        def(
            "git_restore",
            "Discard changes to paths in the worktree or the index",
            LOCAL,
            "vcs:commit",
            json!({"repo": repo(), "paths": paths(),
                   "staged": {"type": "boolean", "description": "restore the index instead of the worktree"},
                   "source": rev("restore from this revision (default: the index, or HEAD when staged)")}),
            &["paths"],
            true,
            Some("{source}"),
            json!({"paths": ["src/lib.rs"]}),
            result(
                json!({"restored": {"type": "array", "items": {"type": "string"}}}),
                &["restored"],
            ),
        ),
        def(
            "git_reset",
            "Move the current branch to a revision (soft, mixed, hard or keep)",
            LOCAL,
            "vcs:commit",
            json!({"repo": repo(),
                   "mode": {"type": "string", "enum": ["soft", "mixed", "hard", "keep"]},
                   "rev": rev("the revision")}),
            &["mode", "rev"],
            true,
            Some("{mode}:{rev}"),
            json!({"mode": "mixed", "rev": "HEAD~1"}),
            result(json!({"head": record()}), &["head"]),
        ),
        def(
            "git_clone",
            "Clone an https or ssh repository into the workspace",
            "Clones `url` (https or ssh only) into `dest`. The host is resolved by Warden and every \
             address vetted (private, loopback and metadata addresses refused unless the host is \
             allowlisted); git is pinned to those addresses, redirects and proxies are off, \
             submodules are not fetched, and the clone runs in a short-lived container that can \
             reach only those addresses, under a deadline and a disk quota.",
            "vcs:read",
            json!({"url": {"type": "string", "minLength": 1, "maxLength": 2048},
                   "dest": {"type": "string", "minLength": 1, "maxLength": 512,
                            "description": "the new directory, relative to the workspace"},
                   "depth": {"type": "integer", "minimum": 1, "maximum": 1000000},
                   "timeout_secs": timeout()}),
            &["url", "dest"],
            true,
            Some("{url}"),
            json!({"url": "https://git.example.com/team/repo.git", "dest": "repo"}),
            result(
                json!({"dest": {"type": "string"}, "url": {"type": "string", "description": "the canonical URL git was given"}, "addresses": {"type": "array", "items": {"type": "string"}, "description": "the vetted addresses git was pinned to"}, "stderr": {"type": "string"}}),
                &["dest", "url", "addresses"],
            ),
        ),
        def(
            "git_fetch",
            "Fetch a remote's branches into refs/remotes/<remote>/",
            "Resolves `remote` with `git ls-remote --get-url` (after the config check), vets the \
             URL and its addresses like git_clone, and fetches from the vetted URL in a \
             short-lived container that can reach only those addresses.",
            "vcs:read",
            json!({"repo": repo(), "remote": {"type": "string", "minLength": 1, "maxLength": 256},
                   "timeout_secs": timeout()}),
            &["remote"],
            true,
            Some("{remote}"),
            json!({"remote": "origin"}),
            remote_result(),
        ),
        def(
            "git_push",
            "Push a branch to the same branch of a remote",
            "Resolves and vets `remote` like git_fetch and pushes `branch` to it. Asks a person \
             by default; a force push always asks (a circuit breaker), in every mode.",
            "vcs:push",
            json!({"repo": repo(), "remote": {"type": "string", "minLength": 1, "maxLength": 256},
                   "branch": {"type": "string", "minLength": 1, "maxLength": 256},
                   "force": {"type": "boolean"},
                   "timeout_secs": timeout()}),
            &["remote", "branch"],
            true,
            Some("{remote}:{branch}"),
            json!({"remote": "origin", "branch": "feat/parser"}),
            remote_result(),
        ),
    ]
}
