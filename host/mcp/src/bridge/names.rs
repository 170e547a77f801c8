//! Advertised names of bridged tools: `{namespace}_{tool}`.
//!
//! Model APIs accept function names of `^[a-zA-Z0-9_-]{1,64}$`, MCP allows
//! 128 characters and dots, and Warden's own tool names are lower case. So
//! every character outside `[a-z0-9_-]` (after lower-casing) becomes `_`,
//! and a name longer than 64 keeps a prefix and ends in 8 hex digits of the
//! sha256 of the upstream name, to exactly 64.
//!
//! The name is a pure function of the namespace and the upstream name: it
//! never changes because another server joined or a restart reordered
//! things, so rules written against it keep matching the same tool. Two
//! upstream names that map to one advertised name (`a.b` and `a_b`, or
//! `Echo` and `echo`) are a collision the catalog reports, never a rename.

use warden_api::MAX_TOOL_NAME;

/// How many hex digits of the upstream name's sha256 end a shortened name.
const HASH_DIGITS: usize = 8;

/// The advertised name of the upstream tool `upstream` of the bridge
/// `namespace` (`^[a-z][a-z0-9]{0,11}$`, checked by the configuration).
pub fn advertised_name(namespace: &str, upstream: &str) -> String {
    let mapped: String = upstream
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
            _ => '_',
        })
        .collect();
    let full = format!("{namespace}_{mapped}");
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    let digest = warden_signing::sha256_digest(upstream.as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    let keep = MAX_TOOL_NAME - namespace.len() - 2 - HASH_DIGITS;
    // `mapped` is ASCII, so any byte index is a character boundary.
    format!(
        "{namespace}_{}_{}",
        &mapped[..keep.min(mapped.len())],
        &hex[..HASH_DIGITS]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_mapped_shortened_and_stable() {
        assert_eq!(advertised_name("gh", "create_issue"), "gh_create_issue");
        assert_eq!(advertised_name("gh", "repo.list/all"), "gh_repo_list_all");
        assert_eq!(advertised_name("gh", "CreateIssue"), "gh_createissue");
        assert_eq!(advertised_name("gh", "données"), "gh_donn_es");
        let long = "x".repeat(128);
        let short = advertised_name("gh", &long);
        assert_eq!(short.len(), 64, "{short}");
        assert!(valid(&short), "{short}");
        assert_eq!(short, advertised_name("gh", &long));
        // Two long names sharing their prefix still differ.
        let other = format!("{}y", "x".repeat(127));
        assert_ne!(advertised_name("gh", &other), short);
        for name in ["a", "a.b.c", &"é".repeat(70), "-", "a b"] {
            let advertised = advertised_name("abcdefghijkl", name);
            assert!(valid(&advertised), "{advertised}");
            assert!(
                advertised.parse::<warden_api::ToolName>().is_ok(),
                "{advertised}"
            );
        }
    }
}
