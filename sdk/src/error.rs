use std::fmt;
use std::io;

/// The class of a tool error. The host turns it into the `domain_code` of
/// the result envelope unless the error carries its own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    AccessDenied,
    Conflict,
    Unsupported,
    Failed,
}

/// An error a tool returns: a kind, a message an agent can act on, and an
/// optional stable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
    pub code: Option<String>,
}

impl ToolError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ToolError {
        ToolError {
            kind,
            message: message.into(),
            code: None,
        }
    }

    pub fn invalid_argument(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::InvalidArgument, message)
    }

    pub fn not_found(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::NotFound, message)
    }

    pub fn access_denied(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::AccessDenied, message)
    }

    pub fn conflict(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::Conflict, message)
    }

    pub fn unsupported(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::Unsupported, message)
    }

    pub fn failed(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::Failed, message)
    }

    /// Attaches a stable, tool-specific code such as `edit_ambiguous`.
    pub fn with_code(mut self, code: impl Into<String>) -> ToolError {
        self.code = Some(code.into());
        self
    }

    /// An I/O error on `path`, classified. Outside a grant WASI answers
    /// "not permitted" or "not capable"; both become `access-denied` with a
    /// hint that the directory needs a grant.
    pub fn io(path: impl fmt::Display, err: &io::Error) -> ToolError {
        let kind = match err.kind() {
            io::ErrorKind::NotFound => ErrorKind::NotFound,
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                ErrorKind::AccessDenied
            }
            io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty => ErrorKind::Conflict,
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidFilename => {
                ErrorKind::InvalidArgument
            }
            io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => {
                ErrorKind::InvalidArgument
            }
            _ if is_not_capable(err) => ErrorKind::AccessDenied,
            _ => ErrorKind::Failed,
        };
        let hint = match kind {
            // The host refused to open a file that can block (a FIFO, a
            // device), or one a denied or protected path reaches (through
            // a link): its reason says so better than a guess.
            ErrorKind::AccessDenied => match refused_open() {
                Some(reason) => format!(" ({reason})"),
                None => " (the call's grant does not cover this path: ask the operator for a directory grant, or read-write access)".to_owned(),
            },
            _ => String::new(),
        };
        ToolError::new(kind, format!("{path}: {err}{hint}"))
    }
}

/// The host's reason for refusing this call's latest open, if that was
/// its latest refusal.
fn refused_open() -> Option<String> {
    crate::__private::bindings::warden::tool::host::denials()
        .pop()
        .filter(|r| r.starts_with("opening `") || r.starts_with("changing `"))
}

/// WASI's ENOTCAPABLE (76 in wasi-libc): an operation outside what a
/// preopened directory permits.
fn is_not_capable(err: &io::Error) -> bool {
    cfg!(target_os = "wasi") && err.raw_os_error() == Some(76)
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}
