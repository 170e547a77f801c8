//! Line-by-line regex search with context, over files already chosen.

use regex::Regex;

use crate::search::Match;
use crate::walk::Found;

pub struct Options {
    pub context: usize,
    pub max: usize,
}

/// Files larger than this are skipped: a search is for text, and one huge
/// file must not exhaust the call's memory.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// (matches, text files searched, truncated).
pub fn search(regex: &Regex, files: &[Found], opts: &Options) -> (Vec<Match>, u64, bool) {
    let mut matches = Vec::new();
    let mut searched = 0;
    for file in files {
        let too_big = std::fs::metadata(&file.path).map_or(true, |m| m.len() > MAX_FILE_BYTES);
        if too_big {
            continue;
        }
        let Ok(bytes) = std::fs::read(&file.path) else {
            continue;
        };
        // Binary (a NUL byte) or not UTF-8: not text, skip.
        if bytes.contains(&0) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        searched += 1;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches.len() == opts.max {
                return (matches, searched, true);
            }
            let from = i.saturating_sub(opts.context);
            let to = (i + 1 + opts.context).min(lines.len());
            matches.push(Match {
                path: file.rel.to_string_lossy().into_owned(),
                line: i as u64 + 1,
                text: (*line).to_owned(),
                before: lines[from..i].iter().map(|s| (*s).to_owned()).collect(),
                after: lines[i + 1..to].iter().map(|s| (*s).to_owned()).collect(),
            });
        }
    }
    (matches, searched, false)
}
