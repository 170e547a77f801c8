//! Brace expansion: `{a,b}` and `{1..3}`, as bash performs it before running anything.
//!
//! Attack: `{rm,-rf,/}` is the command `rm -rf /` to bash but one odd word to a text matcher; and
//! `{a,b}{a,b}...` doubles with every group, so a short line could make the parser allocate
//! without bound. Words are expanded as bash does, with a ceiling on words, nesting and
//! characters produced; past it, the word stays unexpanded and is reported as opaque.

const BRACE_MAX_WORDS: usize = 256;
const BRACE_MAX_DEPTH: usize = 12;

type Chars = Vec<(char, bool)>;

/// What the first expandable brace of a word turns into.
pub(super) enum Brace {
    None,
    TooLarge,
    Expand {
        open: usize,
        close: usize,
        alts: Vec<Chars>,
    },
}

/// Bash brace expansion. Returns false when the result would be too large, in which case the
/// caller keeps the word unexpanded and reports it as opaque.
pub(super) fn brace_expand(
    word: &[(char, bool)],
    depth: usize,
    out: &mut Vec<Chars>,
    budget: &mut usize,
) -> bool {
    if depth > BRACE_MAX_DEPTH {
        return false;
    }
    match find_brace(word) {
        Brace::None => {
            if out.len() >= BRACE_MAX_WORDS || *budget < word.len() {
                return false;
            }
            *budget -= word.len();
            out.push(word.to_vec());
            true
        }
        Brace::TooLarge => false,
        Brace::Expand { open, close, alts } => {
            let prefix = word.get(..open).unwrap_or(&[]);
            let suffix = word.get(close + 1..).unwrap_or(&[]);
            for alt in alts {
                let mut next = Vec::with_capacity(prefix.len() + alt.len() + suffix.len());
                next.extend_from_slice(prefix);
                next.extend(alt);
                next.extend_from_slice(suffix);
                if !brace_expand(&next, depth + 1, out, budget) {
                    return false;
                }
            }
            true
        }
    }
}

/// Finds the leftmost unquoted `{...}` that bash would expand: one with a top-level comma, or a
/// sequence `{a..b[..step]}`. One pass with a stack, so hostile input stays linear.
pub(super) fn find_brace(word: &[(char, bool)]) -> Brace {
    struct Frame {
        open: usize,
        commas: Vec<usize>,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut best: Option<(usize, usize, Vec<usize>)> = None;
    for (i, &(c, lit)) in word.iter().enumerate() {
        if lit {
            continue;
        }
        match c {
            '{' => stack.push(Frame {
                open: i,
                commas: Vec::new(),
            }),
            ',' => {
                if let Some(top) = stack.last_mut() {
                    top.commas.push(i);
                }
            }
            '}' => {
                let Some(frame) = stack.pop() else { continue };
                let better = best.as_ref().is_none_or(|(o, _, _)| frame.open < *o);
                if !better {
                    continue;
                }
                if !frame.commas.is_empty() {
                    best = Some((frame.open, i, frame.commas));
                } else {
                    let inner = word.get(frame.open + 1..i).unwrap_or(&[]);
                    match sequence(inner) {
                        Seq::Not => {}
                        Seq::TooLarge => return Brace::TooLarge,
                        Seq::Items(items) => {
                            return Brace::Expand {
                                open: frame.open,
                                close: i,
                                alts: items,
                            };
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let Some((open, close, commas)) = best else {
        return Brace::None;
    };
    let mut alts = Vec::with_capacity(commas.len() + 1);
    let mut from = open + 1;
    for c in commas.into_iter().chain(std::iter::once(close)) {
        alts.push(word.get(from..c).unwrap_or(&[]).to_vec());
        from = c + 1;
    }
    Brace::Expand { open, close, alts }
}

enum Seq {
    Not,
    TooLarge,
    Items(Vec<Chars>),
}

fn sequence(inner: &[(char, bool)]) -> Seq {
    if inner.len() > 64 || inner.iter().any(|&(_, lit)| lit) {
        return Seq::Not;
    }
    let text: String = inner.iter().map(|&(c, _)| c).collect();
    let parts: Vec<&str> = text.split("..").collect();
    let (a, b, step) = match parts.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(*s)),
        _ => return Seq::Not,
    };
    let step = match step.map(str::parse::<i64>) {
        None => 1,
        Some(Ok(s)) => s.saturating_abs().max(1),
        Some(Err(_)) => return Seq::Not,
    };
    let chars = |s: &str| {
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        }
    };
    let (start, end, width, alpha) = match (a.parse::<i64>(), b.parse::<i64>(), chars(a), chars(b))
    {
        (Ok(x), Ok(y), _, _) if a.len() <= 18 && b.len() <= 18 => {
            let padded = |s: &str| {
                s.trim_start_matches('-').starts_with('0') && s.trim_start_matches('-').len() > 1
            };
            let width = if padded(a) || padded(b) {
                a.len().max(b.len())
            } else {
                0
            };
            (x, y, width, false)
        }
        (_, _, Some(x), Some(y)) => (i64::from(u32::from(x)), i64::from(u32::from(y)), 0, true),
        _ => return Seq::Not,
    };
    let count = start.abs_diff(end) / step.unsigned_abs() + 1;
    if count > BRACE_MAX_WORDS as u64 {
        return Seq::TooLarge;
    }
    let mut items = Vec::new();
    let mut v = start;
    for _ in 0..count {
        let s = if alpha {
            u32::try_from(v)
                .ok()
                .and_then(char::from_u32)
                .map(String::from)
                .unwrap_or_default()
        } else if v < 0 {
            format!("-{:0>w$}", v.unsigned_abs(), w = width.saturating_sub(1))
        } else {
            format!("{v:0>width$}")
        };
        items.push(s.chars().map(|c| (c, true)).collect());
        v = if start <= end {
            v.saturating_add(step)
        } else {
            v.saturating_sub(step)
        };
    }
    Seq::Items(items)
}
