//! Warden's version-control core: the part of the git tools that decides,
//! without running git, whether and how git may run.
//!
//! Owns:
//! - git URL parsing and vetting ([`parse_git_url`], [`vet`]): https and
//!   ssh only, hosts canonicalised the way curl and ssh will read them,
//!   resolved answers checked against the non-public address ranges of
//!   `warden-api` and kept in order for pinning;
//! - the repository-config allowlist ([`check_repo_config`],
//!   [`ConfigCheck`]): a faithful reader of git's config syntax that refuses
//!   every key not known to be harmless;
//! - the invocation builder ([`git_argv`]): argv and the complete, clean
//!   environment of one git command, with every neutralising `-c` option
//!   and the address pins (`http.curloptResolve`, ssh `HostName`);
//! - the map from git operations to action types, specifiers and level
//!   permissions ([`vcs_action`], [`GitLevel`]).
//!
//! Does not own: running git (the Docker sandbox runs the invocations this
//! crate builds), DNS (callers inject a [`Resolve`]), the MCP tools, or the
//! policy decision itself (`warden-policy` decides from the action type and
//! specifier given here). Only [`check_repo_config`] touches the file
//! system, and only to read the few files git would read as configuration.

mod action;
mod argv;
mod config;
mod error;
mod url;
mod vet;

pub use action::{GitLevel, Prompt, VcsAction, vcs_action};
pub use argv::{GitOp, Invocation, LOG_FORMAT, ResetMode, Workspace, git_argv, git_argv_attempt};
pub use config::{ConfigCheck, ConfigEntry, RepoConfig, check_repo_config};
pub use error::{ArgError, ConfigViolation, UrlError, VetError};
pub use url::{GitUrl, Transport, parse_git_url, parse_git_url_with};
pub use vet::{GitNetPolicy, MAX_PINNED_ADDRS, Resolve, Vetted, vet, vet_answers};
