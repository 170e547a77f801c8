//! Exact, unique text replacement.

use warden_sdk::ToolError;

/// Replaces the single occurrence of `old` in `text`; returns the new text
/// and the line (from 1) where the match started.
pub fn replace_once(text: &str, old: &str, new: &str) -> Result<(String, u64), ToolError> {
    if old.is_empty() {
        return Err(ToolError::invalid_argument(
            "`old` is empty; give the exact text to replace",
        ));
    }
    let starts: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    let line_of = |at: usize| text[..at].matches('\n').count() as u64 + 1;
    match starts.as_slice() {
        [] => Err(ToolError::not_found(
            "`old` does not occur in the file; read the file and copy the text exactly (whitespace included)",
        )
        .with_code("edit_no_match")),
        [at] => {
            let mut out = String::with_capacity(text.len() - old.len() + new.len());
            out.push_str(&text[..*at]);
            out.push_str(new);
            out.push_str(&text[at + old.len()..]);
            Ok((out, line_of(*at)))
        }
        many => {
            let lines: Vec<String> = many.iter().take(10).map(|at| line_of(*at).to_string()).collect();
            Err(ToolError::conflict(format!(
                "`old` occurs {} times (lines {}); include more surrounding text so it matches once",
                many.len(),
                lines.join(", ")
            ))
            .with_code("edit_ambiguous"))
        }
    }
}
