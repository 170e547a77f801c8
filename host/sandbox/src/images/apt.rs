//! The Debian mirror, read from this machine's apt configuration at run
//! time, so the repository names no mirror host and a machine with a
//! local mirror or proxy uses it.

use std::path::Path;

use crate::SandboxError;

/// One `deb` source: a mirror URI and its suites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptSource {
    pub uri: String,
    pub suites: Vec<String>,
    pub components: Vec<String>,
}

/// Every `deb` source under an apt configuration root (`/etc/apt`):
/// `sources.list`, `sources.list.d/*.list` and deb822 `*.sources` files.
pub fn sources(apt_dir: &Path) -> Result<Vec<AptSource>, SandboxError> {
    let mut out = Vec::new();
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| SandboxError::AptConfig {
            reason: format!("{}: {e}", path.display()),
        })
    };
    let list = apt_dir.join("sources.list");
    if list.is_file() {
        out.extend(parse_one_line(&read(&list)?));
    }
    let dir = apt_dir.join("sources.list.d");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            match path.extension().and_then(|e| e.to_str()) {
                Some("list") => out.extend(parse_one_line(&read(&path)?)),
                Some("sources") => out.extend(parse_deb822(&read(&path)?)),
                _ => {}
            }
        }
    }
    Ok(out)
}

/// The mirror of the main Debian archive: the first `deb` source with
/// component `main` and a plain release suite (not `-updates`,
/// `-security`, `-backports`).
pub fn debian_mirror(apt_dir: &Path) -> Result<String, SandboxError> {
    sources(apt_dir)?
        .into_iter()
        .find(|s| {
            s.components.iter().any(|c| c == "main")
                && s.suites.iter().any(|suite| !suite.contains('-'))
                && (s.uri.starts_with("http://")
                    || s.uri.starts_with("https://")
                    || s.uri.starts_with("file:"))
        })
        .map(|s| s.uri)
        .ok_or_else(|| SandboxError::AptConfig {
            reason: format!(
                "no `deb` source of a Debian release with component `main` under {}",
                apt_dir.display()
            ),
        })
}

/// `deb [options] URI SUITE COMPONENT...` lines.
pub fn parse_one_line(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix("deb ") else {
            continue;
        };
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix('[') {
            Some(opts) => opts.split_once(']').map_or("", |(_, r)| r),
            None => rest,
        };
        let mut words = rest.split_whitespace();
        if let (Some(uri), Some(suite)) = (words.next(), words.next()) {
            out.push(AptSource {
                uri: uri.to_owned(),
                suites: vec![suite.to_owned()],
                components: words.map(str::to_owned).collect(),
            });
        }
    }
    out
}

/// deb822 stanzas (`Types:`, `URIs:`, `Suites:`, `Components:`), separated
/// by blank lines; `Enabled: no` stanzas are skipped.
pub fn parse_deb822(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| -> Vec<String> {
            stanza
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim().eq_ignore_ascii_case(name).then(|| v.to_owned())
                })
                .map(|v| v.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default()
        };
        if !field("Types").iter().any(|t| t == "deb") {
            continue;
        }
        if field("Enabled")
            .iter()
            .any(|e| e.eq_ignore_ascii_case("no"))
        {
            continue;
        }
        for uri in field("URIs") {
            out.push(AptSource {
                uri,
                suites: field("Suites"),
                components: field("Components"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deb822_stanzas_and_comments() {
        let text = "Types: deb\n# a comment\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n\
                    Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n";
        let s = parse_deb822(text);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].uri, "http://mirror.invalid/debian");
        assert_eq!(s[0].suites, ["bookworm", "bookworm-updates"]);
        assert_eq!(s[1].suites, ["bookworm-security"]);
    }

    #[test]
    fn one_line_with_options() {
        let s = parse_one_line(
            "deb [arch=amd64 signed-by=/k.gpg] http://m.invalid/debian trixie main contrib\n# deb http://x.invalid a b\n",
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].uri, "http://m.invalid/debian");
        assert_eq!(s[0].components, ["main", "contrib"]);
    }

    #[test]
    fn mirror_skips_security_and_disabled() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sources.list.d")).unwrap();
        std::fs::write(
            dir.path().join("sources.list.d/a.sources"),
            "Types: deb\nURIs: http://sec.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n\n\
             Types: deb\nEnabled: no\nURIs: http://off.invalid/debian\nSuites: bookworm\nComponents: main\n\n\
             Types: deb\nURIs: http://main.invalid/debian\nSuites: bookworm\nComponents: main\n",
        )
        .unwrap();
        assert_eq!(
            debian_mirror(dir.path()).unwrap(),
            "http://main.invalid/debian"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(debian_mirror(empty.path()).is_err());
    }
}
