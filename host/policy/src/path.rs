//! Path specifiers for file tools.
//!
//! Attack: a call whose path reads differently to the rule than to the
//! filesystem — `src/../.env`, `//etc//passwd`, `./secrets/./key` — slipping
//! past a deny rule. Paths are made absolute against the call's working
//! directory and normalised lexically before any rule sees them; a NUL byte
//! is refused outright. Symlinks are resolved by the caller (this crate
//! does no I/O), which passes the resolved path too: deny and ask rules
//! fire on either form, allow rules must cover both.
//!
//! Patterns use gitignore-style anchors: `//abs` from the filesystem root,
//! `~/x` from home, `/x` from the workspace root, `./x` or `x/y` from the
//! working directory, and a pattern with no `/` but maybe a trailing one
//! (`*.env`, `secrets/`) matches a name at any depth. `*` and `?` stay inside one path segment, `**` spans any
//! number of them, and a pattern naming a directory covers everything in
//! it.

use std::borrow::Cow;

use crate::glob;

/// Where a path pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Root,
    Home,
    Workspace,
    Cwd,
    AnyDepth,
}

/// The places relative paths and anchors resolve against: all absolute,
/// in the namespace the agent's paths use.
#[derive(Debug, Clone, Copy)]
pub struct PathEnv<'a> {
    pub workspace: &'a str,
    pub cwd: &'a str,
    pub home: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    anchor: Anchor,
    /// The pattern's segments below its anchor, normalised at parse time
    /// when that is possible without knowing the anchor's directory.
    segs: Vec<String>,
    /// The raw text below the anchor, when it climbs (`..`) and so must be
    /// normalised against the anchor's directory at match time.
    climbing: Option<String>,
}

impl Anchor {
    pub(crate) const ALL: [Anchor; 5] = [
        Anchor::Root,
        Anchor::Home,
        Anchor::Workspace,
        Anchor::Cwd,
        Anchor::AnyDepth,
    ];

    /// The directory the anchor stands for.
    fn base<'a>(self, env: &PathEnv<'a>) -> &'a str {
        match self {
            Anchor::Root | Anchor::AnyDepth => "/",
            Anchor::Home => env.home,
            Anchor::Workspace => env.workspace,
            Anchor::Cwd => env.cwd,
        }
    }
}

/// A literal segment is one without `*` or `?`: it matches only itself.
fn is_literal(seg: &str) -> bool {
    !seg.contains(['*', '?'])
}

impl PathPattern {
    pub fn parse(raw: &str) -> PathPattern {
        let raw = raw.trim();
        let (anchor, rest) = if let Some(r) = raw.strip_prefix("//") {
            (Anchor::Root, r)
        } else if raw == "~" {
            (Anchor::Home, "")
        } else if let Some(r) = raw.strip_prefix("~/") {
            (Anchor::Home, r)
        } else if let Some(r) = raw.strip_prefix('/') {
            (Anchor::Workspace, r)
        } else if raw.trim_end_matches('/').contains('/') {
            (Anchor::Cwd, raw)
        } else {
            // No separator but maybe a trailing one (`secrets/`): a name
            // at any depth, as in gitignore.
            (Anchor::AnyDepth, raw)
        };
        let mut segs: Vec<String> = Vec::new();
        let mut climbing = None;
        if anchor == Anchor::AnyDepth {
            segs.push("**".into());
        }
        for seg in segments(rest) {
            match seg {
                "." => {}
                ".." => climbing = Some(rest.to_owned()),
                s => segs.push(s.to_owned()),
            }
        }
        PathPattern {
            anchor,
            segs,
            climbing,
        }
    }

    /// Whether an absolute, normalised path is matched by this pattern (or
    /// lies inside a directory it matches).
    pub fn matches(&self, path: &str, env: &PathEnv<'_>) -> bool {
        let base = self.anchor.base(env);
        if let Some(rest) = &self.climbing {
            let Ok(pattern) = normalize(&format!("{base}/{rest}"), "/") else {
                return false;
            };
            let pattern: Vec<&str> = segments(&pattern).collect();
            let path: Vec<&str> = segments(path).collect();
            return match_segments(&pattern, &path);
        }
        // The base is a literal directory: the path must lie within it, and
        // the pattern's own segments match what is below.
        if !is_within(path, base) {
            return false;
        }
        let below = &path[base.trim_end_matches('/').len().min(path.len())..];
        let path: Vec<&str> = segments(below).collect();
        match_segments(&self.segs, &path)
    }

    /// A literal segment every path this pattern matches contains (the
    /// last one written), for quick rejection; `None` when there is none.
    pub(crate) fn literal_segment(&self) -> Option<&str> {
        if self.climbing.is_some() {
            return None;
        }
        self.segs
            .iter()
            .rev()
            .find(|s| s.as_str() != "**" && is_literal(s))
            .map(String::as_str)
    }

    /// [`PathPattern::matches`] for a path that may hold shell globs: a
    /// glob segment of the path matches any name it could expand to.
    pub(crate) fn may_match(&self, path: &str, env: &PathEnv<'_>) -> bool {
        if !path.contains(['*', '?', '[']) {
            return self.matches(path, env);
        }
        let base = self.anchor.base(env);
        let pattern: Vec<String> = match &self.climbing {
            Some(rest) => match normalize(&format!("{base}/{rest}"), "/") {
                Ok(p) => segments(&p).map(str::to_owned).collect(),
                Err(_) => return false,
            },
            None => segments(base)
                .map(str::to_owned)
                .chain(self.segs.iter().cloned())
                .collect(),
        };
        let path: Vec<&str> = segments(path).collect();
        match_expanding(&pattern, &path)
    }

    /// A segment every path this pattern matches has right below the anchor's directory (for
    /// [`Anchor::AnyDepth`]: at some depth), or `None` when there is no such literal segment.
    /// [`probe`] lists the candidates a path offers.
    pub(crate) fn index_key(&self) -> Option<(Anchor, &str)> {
        if self.climbing.is_some() {
            return None;
        }
        let first = match self.anchor {
            Anchor::AnyDepth => self.segs.get(1),
            _ => self.segs.first(),
        }?;
        (first != "**" && is_literal(first)).then_some((self.anchor, first.as_str()))
    }
}

/// Calls `f` with each (anchor, segment) an absolute, normalised `path` offers to
/// [`PathPattern::index_key`]: the segment right below each anchor's directory the path lies
/// in, and every segment for [`Anchor::AnyDepth`].
pub(crate) fn probe<'p>(path: &'p str, env: &PathEnv<'_>, f: &mut impl FnMut(Anchor, &'p str)) {
    for anchor in Anchor::ALL {
        if anchor == Anchor::AnyDepth {
            segments(path).for_each(|s| f(anchor, s));
            continue;
        }
        let base = anchor.base(env);
        if is_within(path, base) {
            let below = &path[base.trim_end_matches('/').len().min(path.len())..];
            if let Some(first) = segments(below).next() {
                f(anchor, first);
            }
        }
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// Pattern segments against path segments; the pattern may end before the
/// path does (a directory covers its contents).
fn match_segments<S: AsRef<str>>(pattern: &[S], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => true,
        Some((seg, rest)) if seg.as_ref() == "**" => {
            (0..=path.len()).any(|skip| match_segments(rest, path.get(skip..).unwrap_or(&[])))
        }
        Some((seg, rest)) => match path.split_first() {
            Some((p, path_rest)) => {
                glob::matches(seg.as_ref(), p) && match_segments(rest, path_rest)
            }
            None => false,
        },
    }
}

/// [`match_segments`] where a path segment holding a glob matches every
/// name the glob could expand to (and `**`-free, like the shell's).
fn match_expanding<S: AsRef<str>>(pattern: &[S], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => true,
        Some((seg, rest)) if seg.as_ref() == "**" => {
            (0..=path.len()).any(|skip| match_expanding(rest, path.get(skip..).unwrap_or(&[])))
        }
        Some((seg, rest)) => match path.split_first() {
            Some((p, path_rest)) => {
                let seg = seg.as_ref();
                let may = glob::matches(seg, p)
                    || (p.contains(['*', '?', '[']) && (glob::matches(p, seg) || !is_literal(seg)));
                may && match_expanding(rest, path_rest)
            }
            // A glob path ending above the pattern's name (`~/.ssh/*` then
            // `id_rsa`) is handled by the glob segment; a shorter path is
            // a directory that holds what the pattern names.
            None => false,
        },
    }
}

/// Makes `path` absolute against `cwd` and removes `.`, `..` and repeated
/// separators without touching the filesystem. `..` at the root stays at
/// the root, as the kernel does. A NUL byte is an error.
pub fn normalize(path: &str, cwd: &str) -> Result<String, String> {
    if path.contains('\0') || cwd.contains('\0') {
        return Err(format!("path {path:?} contains a NUL byte"));
    }
    Ok(resolve(cwd, path, false))
}

/// [`normalize`] without the NUL check: `path` folded onto `base` (a
/// relative base is read from `/`). With `dot_glob_climbs`, a segment of
/// `path` such as `.*` counts as `..`, since a shell glob starting with a
/// dot may match the parent directory. The one lexical normalisation the
/// crate has: file tools, the read-only check and the circuit breakers all
/// read paths through it.
pub(crate) fn resolve(base: &str, path: &str, dot_glob_climbs: bool) -> String {
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

/// Relative text that folding leaves unchanged: no empty, `.` or `..` segment (nor, with
/// `dot_glob_climbs`, a dot glob).
/// [`resolve`], borrowing `path` when it is already absolute and normal (what it would copy).
pub(crate) fn resolve_cow<'p>(base: &str, path: &'p str, dot_glob_climbs: bool) -> Cow<'p, str> {
    match path.strip_prefix('/') {
        Some(rest) if rest.is_empty() || is_plain(rest, dot_glob_climbs) => Cow::Borrowed(path),
        _ => Cow::Owned(resolve(base, path, dot_glob_climbs)),
    }
}

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
pub(crate) fn expand_home<'a>(path: &'a str, home: Option<&str>) -> Option<Cow<'a, str>> {
    match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            home.map(|h| Cow::Owned(format!("{h}{rest}")))
        }
        Some(_) => None,
        None => Some(Cow::Borrowed(path)),
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

#[cfg(test)]
mod tests;
