//! The user-supplied values of a git invocation, checked before they
//! reach argv.
//!
//! Attack: option injection. A branch named `--upload-pack=evil`, a
//! revision `--output=/etc/x`, a remote `-oProxyCommand=…` or a path
//! `--exec=…` turns a value into an option of git (or of ssh behind it).
//! Values that git reads as revisions, refs or names may not start with
//! `-` and must also pass git's own syntax for them; paths go after `--`
//! and are read literally (`--literal-pathspecs`).

use crate::error::ArgError;

fn invalid(what: &'static str, value: &str, reason: &'static str) -> ArgError {
    ArgError::Invalid {
        what,
        value: value.escape_debug().to_string(),
        reason,
    }
}

fn no_dash(what: &'static str, value: &str) -> Result<(), ArgError> {
    if value.starts_with('-') {
        return Err(ArgError::LeadingDash {
            what,
            value: value.escape_debug().to_string(),
        });
    }
    Ok(())
}

/// A revision expression (`HEAD~2`, `main`, `abc123`, `v1.0^{}`,
/// `HEAD:src/lib.rs`): printable ASCII without spaces, not an option.
pub(crate) fn rev(value: &str) -> Result<&str, ArgError> {
    no_dash("revision", value)?;
    if value.is_empty() || value.len() > 256 {
        return Err(invalid("revision", value, "must be 1 to 256 bytes"));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
        return Err(invalid(
            "revision",
            value,
            "may hold only printable ASCII without spaces or backslashes",
        ));
    }
    Ok(value)
}

/// A branch name git's `check-ref-format --branch` accepts, and not an
/// option.
pub(crate) fn branch(value: &str) -> Result<&str, ArgError> {
    const WHAT: &str = "branch name";
    no_dash(WHAT, value)?;
    if value.is_empty() || value.len() > 255 {
        return Err(invalid(WHAT, value, "must be 1 to 255 bytes"));
    }
    if value == "@" || value == "HEAD" {
        return Err(invalid(WHAT, value, "is reserved"));
    }
    if value
        .chars()
        .any(|c| c.is_control() || c == ' ' || "~^:?*[\\".contains(c))
    {
        return Err(invalid(
            WHAT,
            value,
            "may not hold spaces, control characters or any of ~^:?*[\\",
        ));
    }
    if value.contains("..") || value.contains("@{") || value.contains("//") {
        return Err(invalid(WHAT, value, "may not hold `..`, `@{` or `//`"));
    }
    if value.ends_with('/') || value.ends_with('.') || value.starts_with('/') {
        return Err(invalid(
            WHAT,
            value,
            "may not start with `/` or end with `/` or `.`",
        ));
    }
    if value
        .split('/')
        .any(|c| c.starts_with('.') || c.ends_with(".lock"))
    {
        return Err(invalid(
            WHAT,
            value,
            "no component may start with `.` or end with `.lock`",
        ));
    }
    Ok(value)
}

/// A remote name: letters, digits, `.`, `_`, `-`, not an option.
pub(crate) fn remote(value: &str) -> Result<&str, ArgError> {
    const WHAT: &str = "remote name";
    no_dash(WHAT, value)?;
    if value.is_empty() || value.len() > 100 {
        return Err(invalid(WHAT, value, "must be 1 to 100 bytes"));
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        || value.contains("..")
    {
        return Err(invalid(
            WHAT,
            value,
            "may hold only letters, digits, `.`, `_` and `-`",
        ));
    }
    Ok(value)
}

/// A path relative to the repository, placed after `--`: no control
/// characters, not absolute, no `..` component.
pub(crate) fn path(value: &str) -> Result<&str, ArgError> {
    const WHAT: &str = "path";
    if value.is_empty() || value.len() > 4096 {
        return Err(invalid(WHAT, value, "must be 1 to 4096 bytes"));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(WHAT, value, "holds a control character"));
    }
    if value.starts_with('/') {
        return Err(invalid(WHAT, value, "must be relative to the repository"));
    }
    if value.split('/').any(|c| c == "..") {
        return Err(invalid(WHAT, value, "may not hold a `..` component"));
    }
    Ok(value)
}

/// A clone destination: a relative path that is not an option either.
pub(crate) fn dest(value: &str) -> Result<&str, ArgError> {
    no_dash("clone destination", value)?;
    path(value)
}

/// A commit message: passed as one `--message=` argument, so any text but
/// NUL (which argv cannot carry) is safe.
pub(crate) fn message(value: &str) -> Result<&str, ArgError> {
    const WHAT: &str = "commit message";
    if value.trim().is_empty() {
        return Err(invalid(WHAT, "", "is empty"));
    }
    if value.len() > 64 * 1024 {
        return Err(invalid(WHAT, "…", "is longer than 64 KiB"));
    }
    if value.contains('\0') {
        return Err(invalid(WHAT, "…", "holds a NUL byte"));
    }
    Ok(value)
}

/// An author or committer name or email for the environment: no control
/// characters and none of `<>` (git's ident syntax).
pub(crate) fn ident(what: &'static str, value: &str) -> Result<String, ArgError> {
    if value.is_empty() || value.len() > 256 {
        return Err(invalid(what, value, "must be 1 to 256 bytes"));
    }
    if value
        .chars()
        .any(|c| c.is_control() || c == '<' || c == '>')
    {
        return Err(invalid(
            what,
            value,
            "may not hold control characters, `<` or `>`",
        ));
    }
    Ok(value.to_owned())
}

/// A Warden-controlled absolute path that also appears in an ssh option
/// or a `-c` value: conservative characters only (ssh expands `%` and `~`
/// and splits on spaces).
pub(crate) fn host_path(what: &'static str, value: &str) -> Result<String, ArgError> {
    if !value.starts_with('/') || value.len() > 1024 {
        return Err(invalid(what, value, "must be an absolute path"));
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b))
    {
        return Err(invalid(
            what,
            value,
            "may hold only letters, digits, `/`, `.`, `_` and `-`",
        ));
    }
    if value.split('/').any(|c| c == "..") {
        return Err(invalid(what, value, "may not hold a `..` component"));
    }
    Ok(value.to_owned())
}
