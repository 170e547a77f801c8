//! git's config syntax, read as git 2.39 reads it (`config.c`:
//! `git_parse_source`, `get_base_var`, `get_extended_base_var`,
//! `get_value`, `parse_value`), byte for byte.
//!
//! Attack: a key smuggled past a checker that reads config differently
//! from git — `[core] fsmonitor = x` on one line, `[Core "x"]` vs
//! `[core.x]` case rules, escaped quotes in a subsection, a backslash
//! continuation, a comment character inside quotes, CR line endings, a
//! NUL byte. This reader follows git's state machine; whatever git would
//! reject, and a NUL anywhere, is refused rather than guessed at.

/// One `name = value` line, with git's flat name split as git splits it:
/// section up to the first dot, key after the last, subsection between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Lower case.
    pub section: String,
    /// As written in `[section "sub"]`; lower-cased in `[section.sub]`.
    pub subsection: Option<String>,
    /// Lower case.
    pub key: String,
    /// `None` for a bare `key` line (git reads it as boolean true).
    pub value: Option<String>,
    /// 1-based line the entry starts on.
    pub line: usize,
}

impl ConfigEntry {
    /// `section.subsection.key`, control characters escaped.
    pub fn name(&self) -> String {
        let mut name = self.section.clone();
        if let Some(sub) = &self.subsection {
            name.push('.');
            name.push_str(&sub.escape_debug().to_string());
        }
        name.push('.');
        name.push_str(&self.key);
        name
    }
}

/// Where and why the text is not config git would read the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub reason: &'static str,
}

/// git's `isspace`: space, tab, LF, CR (not VT or FF).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
    eof: bool,
}

impl Reader<'_> {
    /// git's `get_next_char`: CRLF reads as LF; end of input reads as LF
    /// with `eof` set.
    fn next(&mut self) -> u8 {
        let Some(&c) = self.bytes.get(self.pos) else {
            self.eof = true;
            return b'\n';
        };
        self.pos += 1;
        if c == b'\r' && self.bytes.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
            self.line += 1;
            return b'\n';
        }
        if c == b'\n' {
            self.line += 1;
        }
        c
    }

    fn err(&self, reason: &'static str) -> SyntaxError {
        SyntaxError {
            line: self.line,
            reason,
        }
    }
}

/// Parses a whole config file.
pub fn parse(text: &[u8]) -> Result<Vec<ConfigEntry>, SyntaxError> {
    if let Some(pos) = text.iter().position(|b| *b == 0) {
        let line = 1 + text[..pos].iter().filter(|b| **b == b'\n').count();
        return Err(SyntaxError {
            line,
            reason: "a NUL byte",
        });
    }
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    let mut r = Reader {
        bytes: text,
        pos: 0,
        line: 1,
        eof: false,
    };
    let mut entries = Vec::new();
    // The section stem, `section` or `section.subsection`; `None` before
    // the first header.
    let mut stem: Option<Vec<u8>> = None;
    let mut comment = false;
    loop {
        let c = r.next();
        if r.eof {
            return Ok(entries);
        }
        if c == b'\n' {
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            let base = base_var(&mut r)?;
            if base.is_empty() {
                return Err(r.err("an empty section header"));
            }
            stem = Some(base);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(r.err("a line that is neither a section, a key nor a comment"));
        }
        let Some(stem) = &stem else {
            return Err(r.err("a key before the first section"));
        };
        let line = r.line;
        let (key, value) = key_value(&mut r, c)?;
        entries.push(entry(stem, key, value, line)?);
    }
}

/// `get_base_var` after `[`: `[section]`, `[sec.sub]` (all lower-cased)
/// or, after whitespace, `[section "subsection"]`.
fn base_var(r: &mut Reader<'_>) -> Result<Vec<u8>, SyntaxError> {
    let mut name = Vec::new();
    loop {
        let c = r.next();
        if r.eof {
            return Err(r.err("an unterminated section header"));
        }
        if c == b']' {
            return Ok(name);
        }
        if is_space(c) {
            return extended_base_var(r, name, c);
        }
        if !is_key_char(c) && c != b'.' {
            return Err(r.err("an invalid character in a section name"));
        }
        name.push(c.to_ascii_lowercase());
    }
}

fn extended_base_var(
    r: &mut Reader<'_>,
    mut name: Vec<u8>,
    mut c: u8,
) -> Result<Vec<u8>, SyntaxError> {
    loop {
        if c == b'\n' {
            return Err(r.err("a section header broken over lines"));
        }
        c = r.next();
        if !is_space(c) {
            break;
        }
    }
    if c != b'"' {
        return Err(r.err("a section header that is not `[section \"subsection\"]`"));
    }
    name.push(b'.');
    loop {
        let mut c = r.next();
        if c == b'\n' {
            return Err(r.err("a section header broken over lines"));
        }
        if c == b'"' {
            break;
        }
        if c == b'\\' {
            c = r.next();
            if c == b'\n' {
                return Err(r.err("a section header broken over lines"));
            }
        }
        name.push(c);
    }
    if r.next() != b']' {
        return Err(r.err("text between a subsection's closing quote and `]`"));
    }
    Ok(name)
}

/// `get_value`: the key (first character already read), then `=` and a
/// value, or end of line for a bare boolean key.
fn key_value(r: &mut Reader<'_>, first: u8) -> Result<(Vec<u8>, Option<Vec<u8>>), SyntaxError> {
    let mut key = vec![first.to_ascii_lowercase()];
    let mut c;
    loop {
        c = r.next();
        if r.eof || !is_key_char(c) {
            break;
        }
        key.push(c.to_ascii_lowercase());
    }
    while c == b' ' || c == b'\t' {
        c = r.next();
    }
    if c == b'\n' {
        return Ok((key, None));
    }
    if c != b'=' {
        return Err(r.err("a key followed by something other than `=`"));
    }
    value(r).map(|v| (key, Some(v)))
}

/// `parse_value`: quotes, the escapes `\\ \" \n \t \b`, backslash-newline
/// continuation, comments outside quotes, inner whitespace runs kept,
/// leading and trailing whitespace dropped.
fn value(r: &mut Reader<'_>) -> Result<Vec<u8>, SyntaxError> {
    let mut out = Vec::new();
    let (mut quote, mut comment, mut space) = (false, false, 0usize);
    loop {
        let mut c = r.next();
        if c == b'\n' {
            if quote {
                return Err(r.err("an unterminated quote in a value"));
            }
            return Ok(out);
        }
        if comment {
            continue;
        }
        if is_space(c) && !quote {
            if !out.is_empty() {
                space += 1;
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        out.extend(std::iter::repeat_n(b' ', space));
        space = 0;
        if c == b'\\' {
            c = match r.next() {
                b'\n' => continue,
                b't' => b'\t',
                b'b' => 0x08,
                b'n' => b'\n',
                c @ (b'\\' | b'"') => c,
                _ => return Err(r.err("an unknown escape sequence in a value")),
            };
            out.push(c);
            continue;
        }
        if c == b'"' {
            quote = !quote;
            continue;
        }
        out.push(c);
    }
}

/// Splits git's flat name `stem.key` at its first and last dot.
fn entry(
    stem: &[u8],
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    line: usize,
) -> Result<ConfigEntry, SyntaxError> {
    let text = |bytes: Vec<u8>| {
        String::from_utf8(bytes).map_err(|_| SyntaxError {
            line,
            reason: "text that is not UTF-8",
        })
    };
    let stem = text(stem.to_vec())?;
    let (section, subsection) = match stem.split_once('.') {
        Some((section, sub)) => (section.to_owned(), Some(sub.to_owned())),
        None => (stem, None),
    };
    Ok(ConfigEntry {
        section,
        subsection,
        key: text(key)?,
        value: value.map(text).transpose()?,
        line,
    })
}
