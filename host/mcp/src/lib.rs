//! Warden over the Model Context Protocol.
//!
//! Owns: the MCP server (rmcp; its types stay in this crate) over stdio
//! and Streamable HTTP — tools/list per agent, tools/call through the
//! gate, asks as elicitation (an elicitation request on older protocol
//! revisions, an input-required result on 2026-07-28) or as pending
//! approvals in the approvals book, progress and log notifications,
//! cancellation, progressive disclosure; bearer-token identity and
//! Origin/Host checks for HTTP; the admin API (approvals, plugins) on a Unix socket
//! in the state directory and on the HTTP listener, and its client.
//!
//! Does not own: deciding or running calls (the gate behind
//! [`warden_api::ToolHost`]), approvals (behind [`warden_api::Approvals`]),
//! plugins and trust (behind the admin traits of `warden-api`),
//! configuration files (the server crate). Depends on no Warden crate but
//! `warden-api`.

mod admin;
mod admin_client;
mod approve;
mod auth;
pub mod bridge;
mod bridges_admin;
mod busy_poll;
mod capability;
mod coalesce;
mod console;
mod convert;
mod definition;
mod disclosure;
mod error;
mod events;
mod fetch;
mod handler;
mod http;
mod http_workers;
mod line_reader;
mod notify;
mod plugins;
mod resource;
mod sampling;
mod seal;
mod session_transport;
mod sessions;
mod startup;
mod stdio;
mod toolsmith;
mod toolsmith_admin;
mod trust;
mod unread_body;

pub use admin::{AdminSocket, AnswerBody, admin_router, serve_admin_socket};
pub use admin_client::AdminClient;
pub use bridges_admin::PinBody;
pub use console::ConsoleOptions;
pub use definition::{DEFINITION_FIELDS, definition_digest, entry_digest, spec_digest};
pub use disclosure::{Disclosure, DisclosureConfig, DisclosureMode};
pub use error::McpError;
pub use fetch::fetch;
pub use handler::{Server, ServerOptions};
pub use http::{HttpOptions, TokenAgent, serve_http};
pub use plugins::InstallBody;
pub use resource::{
    METADATA_PATH, OperatorToken, Refusal, ResourceServer, TokenVerifier, Verified,
};
pub use seal::{Purpose, SealError, Sealer};
pub use startup::{Loading, Startup, startup};
pub use stdio::{serve_stdio, serve_stream};
