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
//! `~/x` from home, `/x` from the workspace root, `./x` (or `../x`) from
//! the working directory, and a pattern with no leading anchor (`*.env`,
//! `secrets/`, `secrets/**`, `a/b`) matches at any depth: unlike
//! gitignore, whose `a/b` is anchored, since a deny rule on `secrets/**`
//! that `a/b/secrets/x` walks around would protect nothing. `*` and `?` stay inside one path segment, `**` spans any
//! number of them, and a pattern naming a directory covers everything in
//! it.

use crate::glob;

/// Containment of normalised paths, shared with the shell checks.
pub use warden_shell::text_path::is_within;
use warden_shell::text_path::{resolve, segments};

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
        } else if raw.starts_with("./") || raw == "." || raw.split('/').any(|s| s == "..") {
            // A pattern that climbs is read from the working directory.
            (Anchor::Cwd, raw)
        } else {
            // No leading anchor (`secrets/`, `secrets/**`, `a/b`): at any
            // depth. Gitignore anchors `a/b` at the file's directory, but
            // a deny on `secrets/**` that `a/b/secrets/x` walks around
            // protects nothing; `./a/b` says "from here".
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

    /// For allow rules: [`PathPattern::matches`], except that an
    /// unanchored pattern of several segments (`src/**`) covers only what
    /// lies below the working directory. Deny and ask rules read such a
    /// pattern at any depth so it cannot be walked around; an allow rule
    /// reads it as narrowly as its author likely meant it, so the wider
    /// reading never allows more than before (`/etc/x/src/a`).
    pub fn covers(&self, path: &str, env: &PathEnv<'_>) -> bool {
        if !self.multi_segment_any_depth() {
            return self.matches(path, env);
        }
        if !is_within(path, env.cwd) {
            return false;
        }
        let below = &path[env.cwd.trim_end_matches('/').len().min(path.len())..];
        let path: Vec<&str> = segments(below).collect();
        match_segments(self.segs.get(1..).unwrap_or(&[]), &path)
    }

    /// Unanchored, with more than one segment of its own (after the `**`
    /// [`PathPattern::parse`] puts in front).
    fn multi_segment_any_depth(&self) -> bool {
        self.anchor == Anchor::AnyDepth && self.climbing.is_none() && self.segs.len() > 2
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

#[cfg(test)]
mod tests;
