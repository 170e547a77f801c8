//! `*` / `?` globs over plain text (tool names, URLs and other specifiers
//! that are neither shell commands nor paths).

/// True when `text` matches `pattern`, where `*` matches any run of
/// characters (including none) and `?` exactly one.
pub fn matches(pattern: &str, text: &str) -> bool {
    // Byte-wise with backtracking to the last `*`; no allocation, since
    // this runs once per rule per decision. `?` consumes one whole UTF-8
    // character.
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(b'?') => {
                pi += 1;
                ti += char_len(t[ti]);
            }
            Some(c) if *c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    let next = st + char_len(t[st]);
                    pi = sp + 1;
                    ti = next;
                    star = Some((sp, next));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|c| *c == b'*'))
}

/// The text before the first `*` or `?`: every text `pattern` matches starts
/// with it, byte for byte.
pub(crate) fn literal_prefix(pattern: &str) -> &str {
    pattern
        .find(['*', '?'])
        .map_or(pattern, |at| pattern.get(..at).unwrap_or(""))
}

/// Length of the UTF-8 character starting with byte `b`.
fn char_len(b: u8) -> usize {
    match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        assert!(matches("fs_*", "fs_read"));
        assert!(matches("*", ""));
        assert!(matches(
            "https://*.example.com/*",
            "https://api.example.com/v1"
        ));
        assert!(!matches("fs_*", "web_fetch"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(!matches("*a*b", "xxaxxbxxc"));
        assert!(matches("fs_read", "fs_read"));
        assert!(!matches("fs_read", "fs_reader"));
        assert!(matches("caf?", "café"));
        assert!(matches("*é", "café"));
        assert!(!matches("caf??", "café"));
    }
}
