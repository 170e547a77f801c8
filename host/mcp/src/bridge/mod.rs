//! The MCP bridge: external MCP servers served as Warden tools, under the
//! same gate as Warden's own (identity, decision, approval, argument
//! validation against the pinned schema, audit).
//!
//! Owns the client half of MCP: connecting to a server through a
//! [`Connector`] (the host runtime and HTTP here, Docker from the sandbox
//! crate),
//! listing its tools with capped pagination, judging the listing against
//! definition pins (a changed definition is quarantined), advertising each
//! tool as `{namespace}_{tool}`, calling with a timeout and upstream
//! cancellation (never retrying a sent call), and passing results on
//! faithfully with secrets redacted. Publishing into the gate and the
//! operator's commands are the server crate's.

mod catalog;
mod client;
mod connector;
mod discovery;
mod host_process;
pub(crate) mod http;
mod lines;
mod names;
mod result;
mod scrub;
mod session;
mod settings;
mod upstream;

pub use catalog::{Catalog, Held, Listed};
pub use connector::{Connection, Connector, Link, Process, Reader, StderrLog, Writer};
pub use host_process::{HOST_PATH, HostProcess};
pub use http::{HttpConnector, HttpLink, HttpUpstream};
pub use names::advertised_name;
pub use scrub::{MIN_SECRET_LEN, scrub_text};
pub use settings::{BridgeSettings, SessionScope};
pub use upstream::{Bridge, BridgeBackend, BridgeStatus, Judged, ToolStatus};
