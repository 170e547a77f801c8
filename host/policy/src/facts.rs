//! What the engine is told about a call. The caller fills these in from
//! the tool's spec and the call's arguments; the engine trusts nothing
//! else.

use std::borrow::Cow;

use crate::rule::SpecifierKind;
use crate::vcs::VcsOp;

/// The parts of a tool's spec that decisions depend on.
#[derive(Debug, Clone, Copy)]
pub struct ToolFacts<'a> {
    /// The tool name (normalised by the engine: trimmed, lower-cased).
    pub name: &'a str,
    /// Its category, e.g. `file-system`.
    pub category: &'a str,
    /// Its action type, e.g. `code:write`.
    pub action_type: &'a str,
    pub side_effect: bool,
    /// Where the backend runs its calls.
    pub isolation: Isolation,
    /// For a version-control call, the operation it performs (per call:
    /// a push with `force` is a force push). `None` for other tools, and
    /// for a version-control tool that declares none (the engine then
    /// assumes the most far-reaching operation of its action type).
    pub vcs: Option<VcsOp>,
}

/// Where a tool's calls run: the `code-execution` sub-constraint says
/// which of these a level accepts for running code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// As a process of the host, with no sandbox around it.
    Host,
    /// In a fresh WebAssembly instance.
    Wasm,
    /// In a container.
    Container,
}

impl<'a> ToolFacts<'a> {
    /// The tool name as rules and lists name it: trimmed and lower-cased
    /// (borrowed when it already is).
    pub(crate) fn normalized_name(&self) -> Cow<'a, str> {
        let name = self.name.trim();
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        }
    }

    /// Whether the call may change state: the tool's declaration, except
    /// that a version-control call that only reads (a branch list on the
    /// branch tool) has none.
    pub fn has_side_effects(&self) -> bool {
        self.side_effect && !(self.category == "version-control" && self.vcs == Some(VcsOp::Read))
    }

    /// The git operation the level judges: the declared one, else the
    /// most far-reaching of the action type; `None` outside version control.
    pub(crate) fn vcs_op(&self) -> Option<VcsOp> {
        if self.category != "version-control" {
            return None;
        }
        self.vcs.or_else(|| VcsOp::assumed_for(self.action_type))
    }

    /// How this tool's specifier is read: terminal tools take shell command
    /// lines, file-system tools paths, code-execution tools code
    /// (`LANGUAGE: SOURCE`), anything else plain text.
    pub fn specifier_kind(&self) -> SpecifierKind {
        match self.category {
            "terminal" => SpecifierKind::Shell,
            "file-system" => SpecifierKind::Path,
            "code-execution" => SpecifierKind::Code,
            _ => SpecifierKind::Plain,
        }
    }
}

/// One call: the tool, its rendered specifier, and for path specifiers the
/// same path with symlinks resolved (when the caller could resolve it).
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tool: ToolFacts<'a>,
    pub specifier: Option<&'a str>,
    pub resolved_path: Option<&'a str>,
    /// The host a version-control call reaches over the network, as the
    /// backend vetted it: a clone's URL host, a fetch's or push's remote
    /// as resolved from the repository when the call was prepared. `None`
    /// when unknown (a clone's is then read from its specifier; a fetch
    /// or push names only a remote, which says nothing about its host).
    pub remote_host: Option<&'a str>,
    /// Who signed in behind the call (OAuth), for principal rules.
    pub principal: Option<crate::PrincipalFacts<'a>>,
}

/// Where the agent works, in the namespace its paths use. All absolute.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    pub workspace: &'a str,
    /// The project directory; the workspace unless configured otherwise.
    pub project: &'a str,
    pub cwd: &'a str,
    pub home: &'a str,
}
