//! `*` / `?` globs over plain text (tool names, URLs and other specifiers
//! that are neither shell commands nor paths).

/// True when `text` matches `pattern`, where `*` matches any run of
/// characters (including none) and `?` exactly one.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    // Where the last `*` was, and the text position it is trying to cover.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(c) if *c == '?' || Some(c) == t.get(ti) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi.min(p.len())..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        assert!(matches("fs.*", "fs.read"));
        assert!(matches("*", ""));
        assert!(matches(
            "https://*.example.com/*",
            "https://api.example.com/v1"
        ));
        assert!(!matches("fs.*", "web.fetch"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(!matches("*a*b", "xxaxxbxxc"));
        assert!(matches("fs.read", "fs.read"));
        assert!(!matches("fs.read", "fs.reader"));
    }
}
