//! git's machine-readable output as structured results: `status
//! --porcelain=v2 -z --branch`, the log record format of
//! [`warden_vcs::LOG_FORMAT`], and the branch list. Input that does not
//! follow the format is an error naming the record, never a guess.

use serde_json::{Value, json};

/// Why output could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(pub String);

fn bad(what: &str, record: &str) -> Malformed {
    let shown: String = record.chars().take(120).collect();
    Malformed(format!("unexpected {what} in git's output: {shown:?}"))
}

/// `git status --porcelain=v2 -z --branch`.
pub(crate) fn status(out: &[u8]) -> Result<Value, Malformed> {
    let text = String::from_utf8_lossy(out);
    let mut records = text.split('\0').filter(|r| !r.is_empty());
    let mut branch = serde_json::Map::new();
    let mut entries = Vec::new();
    while let Some(record) = records.next() {
        if let Some(header) = record.strip_prefix("# ") {
            let (key, value) = header
                .split_once(' ')
                .ok_or_else(|| bad("header", record))?;
            match key {
                "branch.oid" => {
                    branch.insert("oid".into(), json!((value != "(initial)").then_some(value)));
                }
                "branch.head" => {
                    branch.insert(
                        "head".into(),
                        json!((value != "(detached)").then_some(value)),
                    );
                }
                "branch.upstream" => {
                    branch.insert("upstream".into(), json!(value));
                }
                "branch.ab" => {
                    let (a, b) = value.split_once(' ').ok_or_else(|| bad("header", record))?;
                    let n = |s: &str, sign: char| {
                        s.strip_prefix(sign)
                            .and_then(|d| d.parse::<u64>().ok())
                            .ok_or_else(|| bad("ahead/behind count", record))
                    };
                    branch.insert("ahead".into(), json!(n(a, '+')?));
                    branch.insert("behind".into(), json!(n(b, '-')?));
                }
                // Other headers (stash counts in newer git) carry nothing we report.
                _ => {}
            }
            continue;
        }
        let (kind, rest) = record.split_once(' ').ok_or_else(|| bad("entry", record))?;
        let entry = match kind {
            "1" => {
                let f: Vec<&str> = rest.splitn(8, ' ').collect();
                let [xy, _sub, _mh, _mi, _mw, _hh, _hi, path] = f[..] else {
                    return Err(bad("changed entry", record));
                };
                changed("changed", xy, path, None, record)?
            }
            "2" => {
                let f: Vec<&str> = rest.splitn(9, ' ').collect();
                let [xy, _sub, _mh, _mi, _mw, _hh, _hi, score, path] = f[..] else {
                    return Err(bad("renamed entry", record));
                };
                let orig = records
                    .next()
                    .ok_or_else(|| bad("rename without its source", record))?;
                let mut e = changed("renamed", xy, path, Some(orig), record)?;
                e["score"] = json!(score);
                e
            }
            "u" => {
                let f: Vec<&str> = rest.splitn(10, ' ').collect();
                let [xy, .., path] = f[..] else {
                    return Err(bad("unmerged entry", record));
                };
                if f.len() != 10 {
                    return Err(bad("unmerged entry", record));
                }
                changed("unmerged", xy, path, None, record)?
            }
            "?" => json!({"kind": "untracked", "path": rest}),
            "!" => json!({"kind": "ignored", "path": rest}),
            _ => return Err(bad("entry kind", record)),
        };
        entries.push(entry);
    }
    // Clean as git means it: nothing staged, changed, unmerged or untracked.
    let clean = entries.iter().all(|e| e["kind"] == "ignored");
    Ok(json!({"branch": Value::Object(branch), "entries": entries, "clean": clean}))
}

fn changed(
    kind: &str,
    xy: &str,
    path: &str,
    orig: Option<&str>,
    record: &str,
) -> Result<Value, Malformed> {
    let mut c = xy.chars();
    let (Some(index), Some(worktree), None) = (c.next(), c.next(), c.next()) else {
        return Err(bad("XY status", record));
    };
    let mut e = json!({"kind": kind, "index": index.to_string(), "worktree": worktree.to_string(), "path": path});
    if let Some(orig) = orig {
        e["orig_path"] = json!(orig);
    }
    Ok(e)
}

/// One record of [`warden_vcs::LOG_FORMAT`] (fields split by US).
fn record(text: &str) -> Result<Value, Malformed> {
    let f: Vec<&str> = text.split('\x1f').collect();
    let [hash, parents, name, email, date, subject] = f[..] else {
        return Err(bad("log record", text));
    };
    if hash.len() < 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad("commit hash", text));
    }
    Ok(json!({
        "hash": hash,
        "parents": parents.split(' ').filter(|p| !p.is_empty()).collect::<Vec<_>>(),
        "author": {"name": name, "email": email},
        "date": date,
        "subject": subject,
    }))
}

/// `git log` in [`warden_vcs::LOG_FORMAT`]: records ended by RS.
pub(crate) fn log(out: &[u8]) -> Result<Vec<Value>, Malformed> {
    let text = String::from_utf8_lossy(out);
    text.split('\x1e')
        .map(|r| r.trim_start_matches('\n'))
        .filter(|r| !r.is_empty())
        .map(record)
        .collect()
}

/// `git show` in [`warden_vcs::LOG_FORMAT`]: the record, then the patch.
pub(crate) fn show(out: &[u8]) -> Result<Value, Malformed> {
    let text = String::from_utf8_lossy(out);
    let (head, patch) = text
        .split_once('\x1e')
        .ok_or_else(|| bad("show output without a record", &text))?;
    Ok(json!({"commit": record(head)?, "patch": patch.trim_start_matches('\n')}))
}

/// `git branch --list --format=%(refname:short)%00%(objectname)%00%(HEAD)`.
pub(crate) fn branches(out: &[u8]) -> Result<Vec<Value>, Malformed> {
    let text = String::from_utf8_lossy(out);
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\0').collect();
            let [name, oid, head] = f[..] else {
                return Err(bad("branch line", line));
            };
            Ok(json!({"name": name, "commit": oid, "current": head == "*"}))
        })
        .collect()
}

#[cfg(test)]
mod tests;
