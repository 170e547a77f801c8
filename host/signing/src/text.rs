//! The small text format of Warden's key and signature files: a header
//! line naming the kind and version, then `name: value` lines. Blank lines
//! and lines starting with `#` are comments. Every field is required once;
//! an unknown or repeated field is an error, so a hand-edited file fails
//! loudly instead of being half-read.

use crate::FormatError;

/// The fields of one file, in the order `fields` named them.
pub(crate) fn parse<'a>(
    text: &'a str,
    header: &str,
    fields: &[&str],
) -> Result<Vec<&'a str>, FormatError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    match lines.next() {
        Some((_, first)) if first == header => {}
        Some((line, first)) => {
            return Err(FormatError::new(
                line,
                format!("expected the header `{header}`, found `{}`", clip(first)),
            ));
        }
        None => return Err(FormatError::new(1, format!("empty; expected `{header}`"))),
    }
    let mut values: Vec<Option<&str>> = vec![None; fields.len()];
    for (line, l) in lines {
        let Some((name, value)) = l.split_once(':') else {
            return Err(FormatError::new(
                line,
                format!("expected `name: value`, found `{}`", clip(l)),
            ));
        };
        let name = name.trim();
        let Some(slot) = fields.iter().position(|f| *f == name) else {
            return Err(FormatError::new(
                line,
                format!(
                    "unknown field `{}`; expected {}",
                    clip(name),
                    fields.join(", ")
                ),
            ));
        };
        if values[slot].is_some() {
            return Err(FormatError::new(line, format!("field `{name}` repeated")));
        }
        values[slot] = Some(value.trim());
    }
    fields
        .iter()
        .zip(values)
        .map(|(f, v)| v.ok_or_else(|| FormatError::new(0, format!("missing field `{f}`"))))
        .collect()
}

/// Decodes exactly `N` bytes of hex from a field.
pub(crate) fn hex_field<const N: usize>(field: &str, value: &str) -> Result<[u8; N], FormatError> {
    let mut out = [0u8; N];
    hex::decode_to_slice(value, &mut out).map_err(|_| {
        FormatError::new(0, format!("field `{field}` must be {} hex digits", N * 2))
    })?;
    Ok(out)
}

/// At most 60 characters of a line, for error messages.
fn clip(s: &str) -> String {
    s.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_in_order_and_skips_comments() -> Result<(), FormatError> {
        let got = parse("# c\nkind-v1\n\nb: 2\na:1\n", "kind-v1", &["a", "b"])?;
        assert_eq!(got, vec!["1", "2"]);
        Ok(())
    }

    #[test]
    fn rejects_wrong_header_unknown_repeated_and_missing_fields() {
        let cases = [
            ("other\na: 1", "header"),
            ("kind-v1\nc: 1\na: 1", "unknown field `c`"),
            ("kind-v1\na: 1\na: 2", "repeated"),
            ("kind-v1\n# only a comment", "missing field `a`"),
            ("kind-v1\njunk", "expected `name: value`"),
            ("", "empty"),
        ];
        for (text, want) in cases {
            let err = parse(text, "kind-v1", &["a"])
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
