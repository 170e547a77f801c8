//! Text into HTML: every value an agent or a person supplied goes
//! through [`esc`] before it reaches a page (with the CSP, what stops a
//! tool argument such as `<script>` from running in an operator's
//! browser).

/// `text` with `& < > " '` escaped, safe in element content and in
/// quoted attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            esc(r#"<img src=x onerror="alert('1')">&"#),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
        assert_eq!(esc("plain /w/x.txt"), "plain /w/x.txt");
    }
}
