//! Rule pre-index: a decision looks only at the rules that can match its
//! specifier, so a policy of a thousand rules for one tool costs a few
//! hash look-ups, not a thousand glob matches.
//!
//! Each scoped rule is filed under the literal head of its specifier — the
//! first word of a shell pattern, the first path segment below a path
//! pattern's anchor, the text before a plain glob's first wildcard — or, when
//! that head holds a wildcard, on a list tried for every call. A call offers
//! the heads its specifier has, and the candidates are the rules filed under
//! them plus the wildcard ones, in written order. The index only ever
//! narrows to rules that could not match anyway (each `heads`/`index_key`
//! function says why), so first-match order and every decision stay what a
//! scan of all rules gives.

use std::collections::HashMap;
use std::hash::Hash;

use crate::glob;
use crate::path::{self, Anchor, PathEnv};
use crate::rule::Rule;
use crate::shell::CommandLine;

/// Buckets this small are scanned whole: look-ups would cost more.
const SCAN_BELOW: usize = 8;
/// Plain prefixes are compared on at most this many bytes, which bounds the
/// number of distinct key lengths (and so look-ups) per call.
const PREFIX_CAP: usize = 24;

/// What a call offers the index: its specifier, in the form its tool reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Probe<'a> {
    /// The call has no specifier: only unscoped rules can apply.
    Unscoped,
    /// A command line, matched as deny and ask rules match.
    ShellDeny(&'a CommandLine),
    /// A command line, matched as allow rules match.
    ShellAllow(&'a CommandLine),
    /// Normalised absolute paths.
    Paths(&'a [String], PathEnv<'a>),
    Plain(&'a str),
}

/// Rule indices by literal key.
type ByKey<K> = HashMap<K, Vec<usize>>;

/// Rule indices filed by a literal key, and those whose key is a wildcard.
#[derive(Debug, Clone)]
struct Heads<K> {
    wild: Vec<usize>,
    by: ByKey<K>,
}

impl<K> Default for Heads<K> {
    fn default() -> Self {
        Heads {
            wild: Vec::new(),
            by: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> Heads<K> {
    /// Files rule `i` under `keys`, or as wild when there are none to file it under.
    fn file(&mut self, i: usize, keys: Option<Vec<K>>) {
        match keys {
            None => self.wild.push(i),
            Some(keys) => {
                for k in keys {
                    self.by.entry(k).or_default().push(i);
                }
            }
        }
    }
}

/// The rules of one list for one tool name (or for globbed tool names).
#[derive(Debug, Clone, Default)]
pub(crate) struct Bucket {
    all: Vec<usize>,
    unscoped: Vec<usize>,
    shell_deny: Heads<Vec<u32>>,
    shell_allow: Heads<Vec<u32>>,
    /// Indexed by [`Anchor`] position in [`Anchor::ALL`].
    path: [Heads<String>; 5],
    path_wild: Vec<usize>,
    plain_wild: Vec<usize>,
    /// Per key length, ascending.
    plain: Vec<(usize, ByKey<Box<[u8]>>)>,
}

fn anchor_slot(a: Anchor) -> usize {
    Anchor::ALL.iter().position(|&x| x == a).unwrap_or(0)
}

impl Bucket {
    pub(crate) fn push(&mut self, i: usize, rule: &Rule) {
        self.all.push(i);
        let (Some(shell), Some(path), Some(raw)) = (rule.shell(), rule.path(), rule.raw_spec())
        else {
            self.unscoped.push(i);
            return;
        };
        self.shell_deny.file(i, shell.deny_heads());
        self.shell_allow.file(i, shell.allow_heads());
        match path.index_key() {
            Some((anchor, seg)) => {
                let slot = self.path.get_mut(anchor_slot(anchor));
                if let Some(heads) = slot {
                    heads.file(i, Some(vec![seg.to_owned()]));
                }
            }
            None => self.path_wild.push(i),
        }
        let prefix = glob::literal_prefix(raw).as_bytes();
        let prefix = prefix.get(..PREFIX_CAP).unwrap_or(prefix);
        if prefix.is_empty() {
            self.plain_wild.push(i);
            return;
        }
        let at = match self.plain.binary_search_by_key(&prefix.len(), |(l, _)| *l) {
            Ok(at) => at,
            Err(at) => {
                self.plain.insert(at, (prefix.len(), HashMap::new()));
                at
            }
        };
        if let Some((_, map)) = self.plain.get_mut(at) {
            map.entry(prefix.into()).or_default().push(i);
        }
    }

    /// Every rule in the bucket, in written order.
    pub(crate) fn all(&self) -> &[usize] {
        &self.all
    }

    /// Appends the indices of the rules that may match `probe` (unsorted, maybe repeated).
    pub(crate) fn candidates(&self, probe: &Probe<'_>, out: &mut Vec<usize>) {
        if self.all.len() < SCAN_BELOW {
            out.extend_from_slice(&self.all);
            return;
        }
        out.extend_from_slice(&self.unscoped);
        let complete = match *probe {
            Probe::Unscoped => true,
            Probe::ShellDeny(line) => {
                out.extend_from_slice(&self.shell_deny.wild);
                line.deny_heads(&mut |h| extend_from(out, self.shell_deny.by.get(h)))
            }
            Probe::ShellAllow(line) => {
                out.extend_from_slice(&self.shell_allow.wild);
                line.allow_heads(&mut |h| extend_from(out, self.shell_allow.by.get(h)))
            }
            Probe::Paths(paths, env) => {
                out.extend_from_slice(&self.path_wild);
                for p in paths {
                    path::probe(p, &env, &mut |anchor, seg| {
                        let heads = self.path.get(anchor_slot(anchor));
                        extend_from(out, heads.and_then(|h| h.by.get(seg)));
                    });
                }
                true
            }
            Probe::Plain(text) => {
                out.extend_from_slice(&self.plain_wild);
                for (len, map) in &self.plain {
                    match text.as_bytes().get(..*len) {
                        Some(head) => extend_from(out, map.get(head)),
                        None => break,
                    }
                }
                true
            }
        };
        if !complete {
            out.extend_from_slice(&self.all);
        }
    }
}

fn extend_from(out: &mut Vec<usize>, found: Option<&Vec<usize>>) {
    if let Some(v) = found {
        out.extend_from_slice(v);
    }
}

#[cfg(test)]
mod tests;
