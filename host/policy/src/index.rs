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

use std::cell::OnceCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use warden_shell::{CommandLine, Head, Inline};

use crate::glob;
use crate::path::{self, Anchor, PathEnv};
use crate::rule::Rule;

/// Buckets this small are scanned whole: look-ups would cost more. Not for
/// deny matching of command lines, where trying a rule builds the line's deny
/// forms, which costs more than the look-ups.
const SCAN_BELOW: usize = 8;
/// Plain prefixes are compared on at most this many bytes, which bounds the
/// number of distinct key lengths (and so look-ups) per call.
const PREFIX_CAP: usize = 24;

/// What a call offers the index: its specifier, in the form its tool reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Probe<'a> {
    /// The call has no specifier: only unscoped rules can apply.
    Unscoped,
    /// A command line, matched as deny and ask rules match; its keys are worked out on first
    /// use and kept in `keys`, so the deny and ask lists share them.
    ShellDeny {
        line: &'a CommandLine<'a>,
        keys: &'a OnceCell<DenyKeys>,
    },
    /// A command line, matched as allow rules match.
    ShellAllow(&'a CommandLine<'a>),
    /// Normalised absolute paths.
    Paths(&'a [String], PathEnv<'a>),
    Plain(&'a str),
}

/// A key's fingerprint: FNV-1a over its units, then mixed so every bit
/// depends on every unit. Two keys may share one; that only makes a rule a
/// candidate it need not be (candidates are matched in full), never the
/// reverse.
fn fingerprint(units: impl IntoIterator<Item = u32>) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for u in units {
        h = (h ^ u64::from(u)).wrapping_mul(PRIME);
    }
    h ^= h >> 32;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

/// The fingerprint of a command line's head: the same as that of a pattern's head of the same
/// characters.
fn head_key(h: Head<'_>) -> u64 {
    match h {
        // An ASCII character's unit is its byte.
        Head::Text(t) if t.is_ascii() => fingerprint(t.bytes().map(u32::from)),
        Head::Text(t) => fingerprint(t.chars().map(u32::from)),
        Head::Units(u) => fingerprint(u.iter().copied()),
    }
}

fn bytes_fingerprint(text: &[u8]) -> u64 {
    fingerprint(text.iter().map(|&b| u32::from(b)))
}

/// The keys a command line offers deny and ask rules (see [`CommandLine::deny_heads`]), without
/// repeats; when not `complete`, every rule is a candidate whatever the keys.
#[derive(Debug, Clone)]
pub(crate) struct DenyKeys {
    keys: Inline<u64, 8>,
    complete: bool,
}

impl DenyKeys {
    pub(crate) fn new(line: &CommandLine<'_>) -> DenyKeys {
        let mut keys: Inline<u64, 8> = Inline::default();
        let complete = line.deny_heads(&mut |h| {
            let k = head_key(h);
            if !keys.contains(&k) {
                keys.push(k);
            }
        });
        DenyKeys { keys, complete }
    }
}

/// Hashes the already mixed fingerprints by passing them through.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    /// Folds bytes in: the names of a [`NameMap`] (the `u64` keys of [`ByKey`] pass through).
    fn write(&mut self, bytes: &[u8]) {
        let seed = self.0;
        self.0 = fingerprint(bytes.iter().map(|&b| u32::from(b))) ^ seed.rotate_left(17);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Rule indices by key fingerprint.
type ByKey = HashMap<u64, Vec<usize>, BuildHasherDefault<Prehashed>>;

/// A map keyed by configured names (tools), hashed with the fingerprint instead of SipHash: a
/// decision looks a tool up once per list, and only configuration inserts keys, so there is no
/// flooding to defend against.
pub(crate) type NameMap<V> = HashMap<String, V, BuildHasherDefault<Prehashed>>;

/// Rule indices filed by a literal key, and those whose key is a wildcard.
#[derive(Debug, Clone, Default)]
struct Heads {
    wild: Vec<usize>,
    by: ByKey,
}

impl Heads {
    /// Files rule `i` under the fingerprints `keys`, or as wild when there
    /// are none to file it under.
    fn file(&mut self, i: usize, keys: Option<impl IntoIterator<Item = u64>>) {
        match keys {
            None => self.wild.push(i),
            Some(keys) => {
                for k in keys {
                    let rules = self.by.entry(k).or_default();
                    if rules.last() != Some(&i) {
                        rules.push(i);
                    }
                }
            }
        }
    }

    fn get(&self, key: u64) -> Option<&Vec<usize>> {
        self.by.get(&key)
    }
}

/// The rules of one list for one tool name (or for globbed tool names).
#[derive(Debug, Clone, Default)]
pub(crate) struct Bucket {
    all: Vec<usize>,
    unscoped: Vec<usize>,
    shell_deny: Heads,
    shell_allow: Heads,
    /// Indexed by [`Anchor`] position in [`Anchor::ALL`].
    path: [Heads; 5],
    path_wild: Vec<usize>,
    plain_wild: Vec<usize>,
    /// Per key length, ascending.
    plain: Vec<(usize, ByKey)>,
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
        let prints = |heads: Option<Vec<Vec<u32>>>| {
            heads.map(|hs| hs.into_iter().map(fingerprint).collect::<Vec<_>>())
        };
        self.shell_deny.file(i, prints(shell.deny_heads()));
        self.shell_allow.file(i, prints(shell.allow_heads()));
        match path.index_key() {
            Some((anchor, seg)) => {
                let slot = self.path.get_mut(anchor_slot(anchor));
                if let Some(heads) = slot {
                    heads.file(i, Some([bytes_fingerprint(seg.as_bytes())]));
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
                self.plain.insert(at, (prefix.len(), ByKey::default()));
                at
            }
        };
        if let Some((_, map)) = self.plain.get_mut(at) {
            map.entry(bytes_fingerprint(prefix)).or_default().push(i);
        }
    }

    /// Every rule in the bucket, in written order.
    pub(crate) fn all(&self) -> &[usize] {
        &self.all
    }

    /// Appends the indices of the rules that may match `probe` (unsorted, maybe repeated).
    pub(crate) fn candidates(&self, probe: &Probe<'_>, out: &mut Vec<usize>) {
        if self.all.is_empty() {
            return;
        }
        if self.all.len() < SCAN_BELOW && !matches!(probe, Probe::ShellDeny { .. }) {
            out.extend_from_slice(&self.all);
            return;
        }
        out.extend_from_slice(&self.unscoped);
        let complete = match *probe {
            Probe::Unscoped => true,
            Probe::ShellDeny { line, keys } => {
                out.extend_from_slice(&self.shell_deny.wild);
                let keys = keys.get_or_init(|| DenyKeys::new(line));
                for &k in keys.keys.iter() {
                    extend_from(out, self.shell_deny.get(k));
                }
                keys.complete
            }
            Probe::ShellAllow(line) => {
                out.extend_from_slice(&self.shell_allow.wild);
                line.allow_heads(&mut |h| extend_from(out, self.shell_allow.get(head_key(h))))
            }
            Probe::Paths(paths, env) => {
                out.extend_from_slice(&self.path_wild);
                for p in paths {
                    path::probe(p, &env, &mut |anchor, seg| {
                        let heads = self.path.get(anchor_slot(anchor));
                        let key = bytes_fingerprint(seg.as_bytes());
                        extend_from(out, heads.and_then(|h| h.get(key)));
                    });
                }
                true
            }
            Probe::Plain(text) => {
                out.extend_from_slice(&self.plain_wild);
                for (len, map) in &self.plain {
                    match text.as_bytes().get(..*len) {
                        Some(head) => extend_from(out, map.get(&bytes_fingerprint(head))),
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
