//! Paths as text: folded, expanded and compared without touching a file
//! system.
//!
//! Attack: a path that reads differently to a check than to the kernel —
//! `src/../../etc`, `//etc//passwd`, `~/.ssh` — slipping past it. These
//! helpers are the one lexical normalisation Warden has: the shell checks
//! here (the read-only set, the circuit breakers, paths in a command line)
//! and the policy engine's file rules (`warden_policy::path`) both read paths
//! through them, so a path is judged the same way whichever check sees it.
//! Symbolic links cannot be seen as text; the caller resolves them.

use std::borrow::Cow;

/// `path` folded onto `base` (a relative base is read from `/`): absolute,
/// with `.`, `..` and repeated separators removed. `..` at the root stays at
/// the root, as the kernel does. With `dot_glob_climbs`, a segment of `path`
/// such as `.*` counts as `..`, since a shell glob starting with a dot may
/// match the parent directory. No NUL check: `warden_policy::path::normalize`
/// adds it.
pub fn resolve(base: &str, path: &str, dot_glob_climbs: bool) -> String {
    // Most paths are already normal: copy them instead of folding.
    if let Some(rest) = path.strip_prefix('/') {
        if rest.is_empty() {
            return "/".to_owned();
        }
        if is_plain(rest, dot_glob_climbs) {
            return path.to_owned();
        }
    } else if let Some(b) = base.strip_prefix('/')
        && (b.is_empty() || is_plain(b, false))
        && is_plain(path, dot_glob_climbs)
    {
        let mut out = String::with_capacity(base.len() + path.len() + 1);
        out.push_str(if b.is_empty() { "" } else { base });
        out.push('/');
        out.push_str(path);
        return out;
    }
    fold(base, path, dot_glob_climbs)
}

/// [`resolve`], borrowing `path` when it is already absolute and normal (what it would copy).
pub fn resolve_cow<'p>(base: &str, path: &'p str, dot_glob_climbs: bool) -> Cow<'p, str> {
    match path.strip_prefix('/') {
        Some(rest) if rest.is_empty() || is_plain(rest, dot_glob_climbs) => Cow::Borrowed(path),
        _ => Cow::Owned(resolve(base, path, dot_glob_climbs)),
    }
}

/// Relative text that folding leaves unchanged: no empty, `.` or `..` segment (nor, with
/// `dot_glob_climbs`, a dot glob).
fn is_plain(text: &str, dot_glob_climbs: bool) -> bool {
    !text.is_empty()
        && text
            .as_bytes()
            .split(|&b| b == b'/')
            .all(|s| !(matches!(s, b"" | b"." | b"..") || dot_glob_climbs && is_dot_glob(s)))
}

fn is_dot_glob(seg: &[u8]) -> bool {
    seg.first() == Some(&b'.') && seg.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// [`resolve`] the long way, segment by segment.
fn fold(base: &str, path: &str, dot_glob_climbs: bool) -> String {
    let mut out = String::with_capacity(base.len() + path.len() + 1);
    let base = if path.starts_with('/') { "" } else { base };
    for seg in segments(base) {
        push_segment(&mut out, seg, false);
    }
    for seg in segments(path) {
        push_segment(&mut out, seg, dot_glob_climbs);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Appends one segment to a path being folded (`""` is the root).
fn push_segment(out: &mut String, seg: &str, dot_glob_climbs: bool) {
    let climbs = seg == ".." || (dot_glob_climbs && is_dot_glob(seg.as_bytes()));
    if climbs {
        let parent = out.rfind('/').unwrap_or(0);
        out.truncate(parent);
    } else if seg != "." {
        out.push('/');
        out.push_str(seg);
    }
}

/// `~` and `~/x` with `home` put in; `None` for `~user` (another user's
/// home) or when there is no home to put in. Other paths are unchanged.
pub fn expand_home<'a>(path: &'a str, home: Option<&str>) -> Option<Cow<'a, str>> {
    match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            home.map(|h| Cow::Owned(format!("{h}{rest}")))
        }
        Some(_) => None,
        None => Some(Cow::Borrowed(path)),
    }
}

/// [`expand_home`], and also the other spellings of the agent's own home a shell reads as it:
/// `$HOME`, `${HOME}` and `~NAME` where `NAME` is the home directory's own name (the user's
/// login, as homes are laid out). For checks that must not miss a home path (denied and
/// protected paths): `cat $HOME/.aws/credentials` names the same file as
/// `cat ~/.aws/credentials`. A word quoted so the shell would not expand it is expanded too,
/// which only makes such a check stricter.
pub fn expand_home_spellings<'a>(path: &'a str, home: Option<&str>) -> Option<Cow<'a, str>> {
    let rest = ["${HOME}", "$HOME"]
        .iter()
        .find_map(|var| path.strip_prefix(var))
        .or_else(|| {
            let user = home?.trim_end_matches('/').rsplit('/').next()?;
            let after = path.strip_prefix('~')?.strip_prefix(user)?;
            (!user.is_empty()).then_some(after)
        });
    match rest {
        // `$HOMEDIR` and `~agentx` are other names.
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            home.map(|h| Cow::Owned(format!("{h}{rest}")))
        }
        _ => expand_home(path, home),
    }
}

/// Whether `path` is `dir` or inside it (both absolute and normalised).
pub fn is_within(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The non-empty segments of `path` (repeated and trailing separators
/// skipped).
pub fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
