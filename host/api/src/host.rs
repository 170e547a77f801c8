use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CallHooks, CallLimits, Envelope, Grants, ToolSpec};

/// A boxed, sendable future: the traits below are object-safe so the MCP
/// server can hold a `dyn ToolHost`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is calling. Every id goes into every log line of the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CallContext {
    pub agent: String,
    pub session: String,
    #[serde(default)]
    pub task: Option<String>,
    pub request_id: String,
    /// The signed-in principal, for a call made with an OAuth token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<crate::Principal>,
}

/// A call as an agent makes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CallRequest {
    pub tool: String,
    pub args: Value,
    pub context: CallContext,
}

/// What the host serves to agents: the tools an agent may see, and calls.
pub trait ToolHost: Send + Sync {
    /// The tools `agent` may use, sorted by name.
    fn list_tools(&self, agent: &str) -> Vec<ToolSpec>;

    /// Runs one call through the whole call path. Never fails: every
    /// problem is an error envelope.
    fn call(&self, request: CallRequest) -> BoxFuture<'_, Envelope> {
        self.call_with(request, CallHooks::default())
    }

    /// A tool's on-demand document `id`, for an agent that may see the
    /// tool: an ok envelope with the document as a string.
    fn resource<'a>(
        &'a self,
        agent: &'a str,
        tool: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Envelope>;

    /// [`ToolHost::call`] with per-call hooks: who answers an ask, and
    /// where the tool's progress and log lines go. Dropping the future
    /// cancels the call and frees everything it held.
    fn call_with(&self, request: CallRequest, hooks: CallHooks) -> BoxFuture<'_, Envelope>;

    /// Runs calls concurrently (at most `max_concurrency` at once when
    /// given). One failing call never aborts its siblings; results come
    /// back in request order.
    fn call_batch(
        &self,
        requests: Vec<CallRequest>,
        max_concurrency: Option<usize>,
    ) -> BoxFuture<'_, Vec<Envelope>>;

    /// Whether agents may ask this host for time-boxed capability grants:
    /// a call of [`REQUEST_CAPABILITY`] through [`ToolHost::call_with`].
    fn offers_capability_requests(&self) -> bool {
        false
    }

    /// Whether agents may propose blueprints to this host's toolsmith: a
    /// call of [`TOOLSMITH_PROPOSE`](crate::TOOLSMITH_PROPOSE) through
    /// [`ToolHost::call_with`].
    fn offers_toolsmith(&self) -> bool {
        false
    }

    /// A session ended (its client disconnected): whatever the host kept
    /// for it and for the tasks that ran in it (per-task containers) goes.
    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        let _ = session;
        Box::pin(std::future::ready(()))
    }
}

/// The name of the host's own tool for asking a time-boxed capability
/// grant (reference 004, "Dynamic Acquisition"); never a plugin's.
pub const REQUEST_CAPABILITY: &str = "request_capability";

/// A call as a backend receives it: already looked up, decided and
/// validated, with the capabilities it was granted.
#[derive(Debug, Clone, Copy)]
pub struct BackendCall<'a> {
    pub tool: &'a ToolSpec,
    pub args: &'a Value,
    pub context: &'a CallContext,
    pub grants: &'a Grants,
    pub limits: CallLimits,
    /// Where the tool's progress and log lines go, besides the host log.
    pub events: Option<&'a std::sync::Arc<dyn crate::CallEvents>>,
    /// Which paths this call may not touch, whatever its grants reach
    /// (the agent's denied paths); backends that walk or open paths the
    /// decision never saw ask it. `None`: nothing is denied.
    pub paths: Option<&'a std::sync::Arc<dyn PathGuard>>,
    /// The directory (guest path) the decision resolved the call's
    /// relative paths against; a backend resolves them there too, so the
    /// file the policy judged is the file opened. `None`: the backend's
    /// own default.
    pub cwd: Option<&'a str>,
    /// The remote URL the decision judged for a version-control call that
    /// reaches one ([`VcsFacts::remote`]): the backend reaches exactly it,
    /// or refuses the call when the repository now names another. `None`:
    /// none was judged.
    pub remote: Option<&'a str>,
}

/// The denied paths of a call, for backends that open paths the decision
/// never saw (a directory walk, a search).
pub trait PathGuard: Send + Sync + std::fmt::Debug {
    /// Why `path` (absolute, in the guest's namespace) is out of reach for
    /// this call, or `None` when it is not.
    fn denied(&self, path: &str) -> Option<String>;

    /// Why changing `path` needs a person (a protected path: git hooks,
    /// Warden's config, shell startup files, ...), or `None`. Backends that
    /// cannot see each write (a container) keep such paths read-only
    /// unless [`PathGuard::approved`].
    fn protected(&self, path: &str) -> Option<String>;

    /// Who allowed this call, which bounds what it may change where it
    /// runs.
    fn effects(&self) -> Effects;

    /// A person approved this call: it may change protected paths.
    fn approved(&self) -> bool {
        self.effects() == Effects::Approved
    }
}

/// What a call may change where it runs, from who allowed it.
///
/// Attack: a command line the policy misread. The policy judges a line
/// "read-only" from its text, so a line that writes in a way the reading
/// missed (bash evaluating `$(...)` inside an array subscript of a
/// builtin's argument) would write with the verdict of one that only
/// reads. A backend that runs agent text holds the verdict where the
/// call runs instead: a [`Effects::ReadOnly`] call runs where nothing
/// granted can be written and nothing can be reached, so a misreading
/// fails to write instead of writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effects {
    /// Allowed without a person only because it reads (a read-only
    /// command, a tool without side effects): it runs with every granted
    /// directory read-only, and a command line with no network.
    ReadOnly,
    /// Allowed without a person by a rule, a grant or the mode: it may
    /// write what its grants reach, never protected paths.
    Unattended,
    /// A person approved this very call: protected paths may change too.
    Approved,
}

/// Where a backend runs its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// As a process of the host, with no sandbox around it.
    Host,
    /// In a fresh WebAssembly instance.
    Wasm,
    /// In a container.
    Container,
}

/// What one version-control call does to a repository: the level's git
/// sub-constraint and the force-push circuit breaker read it (the action
/// type alone does not tell `status` from `clone`, or `commit` from
/// `reset --hard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VcsOperation {
    /// Reads the local repository: status, log, diff, show, branch list.
    Read,
    /// Reads from a remote into the workspace: clone, fetch.
    Fetch,
    /// A fetch or clone from a host the operator allowlisted for git.
    FetchAllowlisted,
    /// Creates or switches a local branch.
    Branch,
    /// Deletes a local branch.
    BranchDelete,
    /// Records local work: add and commit.
    Commit,
    /// Discards local work: restore, reset.
    Discard,
    /// Publishes commits to a remote.
    Push,
    /// A push that may overwrite the remote branch's history.
    ForcePush,
}

/// What a version-control call does, as its backend declares it when the
/// call is prepared, before the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VcsFacts {
    pub operation: VcsOperation,
    /// The remote URL the call reaches, vetted: a clone's URL, a fetch's
    /// or push's remote as the repository names it now. The decision
    /// judges it and the backend gets it back ([`BackendCall::remote`]),
    /// so the remote judged is the remote reached.
    pub remote: Option<String>,
    /// That URL's host, canonical (for the network sub-constraint).
    pub remote_host: Option<String>,
}

impl VcsFacts {
    /// An operation reaching no remote (or none the backend resolved).
    pub fn local(operation: VcsOperation) -> VcsFacts {
        VcsFacts {
            operation,
            remote: None,
            remote_host: None,
        }
    }
}

/// Something that runs tools: the wasm runtime, a Docker sandbox, an MCP
/// bridge.
pub trait Backend: Send + Sync {
    /// The tools this backend serves.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Where calls run; a level's `code-execution` sub-constraint says
    /// which it accepts for running code.
    fn isolation(&self) -> Isolation;

    /// Runs one call. Never fails: every problem is an error envelope.
    fn invoke<'a>(&'a self, call: BackendCall<'a>) -> BoxFuture<'a, Envelope>;

    /// One of a tool's on-demand documents (named in its spec's
    /// `resources`), as a JSON string in an ok envelope.
    fn resource<'a>(
        &'a self,
        tool: &'a str,
        id: &'a str,
        limits: CallLimits,
    ) -> BoxFuture<'a, Envelope> {
        let _ = limits;
        Box::pin(std::future::ready(Envelope::host(
            crate::ErrorType::UnknownTool,
            crate::HostCode::NotFound,
            format!("`{tool}` has no resource `{id}`"),
        )))
    }

    /// Why `name`, a tool this backend knows but does not serve now (an
    /// external server's tool held back until an operator approves its
    /// definition), is refused: the gate answers a call of a name no
    /// table entry has with this rather than "unknown tool". Default:
    /// nothing is withheld.
    fn withheld(&self, name: &str) -> Option<crate::Envelope> {
        let _ = name;
        None
    }

    /// What a call of `tool` (one of this backend's version-control tools)
    /// with `args`, under the tool's `grants`, does to a repository, and
    /// which remote it reaches. Default: nothing declared, and the policy
    /// judges the call as the most far-reaching operation of the tool's
    /// action type.
    fn vcs_operation(&self, tool: &str, args: &Value, grants: &Grants) -> Option<VcsFacts> {
        let _ = (tool, args, grants);
        None
    }

    /// Task `task` ended: whatever the backend kept for it (a per-task
    /// container) goes. Default: nothing is kept per task.
    fn end_task<'a>(&'a self, task: &'a str) -> BoxFuture<'a, ()> {
        let _ = task;
        Box::pin(std::future::ready(()))
    }
}
