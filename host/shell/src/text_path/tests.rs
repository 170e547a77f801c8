use super::*;

#[test]
fn within() {
    assert!(is_within("/w/a", "/w"));
    assert!(is_within("/w", "/w"));
    assert!(!is_within("/wx", "/w"));
    assert!(is_within("/anything", "/"));
}

#[test]
fn resolve_folds_onto_a_base() {
    assert_eq!(resolve("/w/a", "../b", false), "/w/b");
    assert_eq!(resolve("/w/a", "/x/./y", false), "/x/y");
    assert_eq!(resolve("w/../a", "b", false), "/a/b");
    assert_eq!(resolve("/w/.*", "x", true), "/w/.*/x");
    assert_eq!(resolve("/w/a", ".*/x", true), "/w/x");
    assert_eq!(resolve("/w/a", ".*/x", false), "/w/a/.*/x");
    assert_eq!(resolve("", "..", false), "/");
}

#[test]
fn home_expansion() {
    let h = Some("/home/a");
    assert_eq!(expand_home("~", h).as_deref(), Some("/home/a"));
    assert_eq!(expand_home("~/x", h).as_deref(), Some("/home/a/x"));
    assert_eq!(expand_home("~bob/x", h), None);
    assert_eq!(expand_home("~/x", None), None);
    assert_eq!(expand_home("x/~", h).as_deref(), Some("x/~"));
}

#[test]
fn resolve_shortcut_agrees_with_folding() {
    let texts = [
        "", "/", "//", "a", "a/b", "/a", "/a/b", "/a/", "a//b", "./a", "a/.", "a/..", "/..", "..",
        ".*", "a/.*", "/a/.*/b", ".a", "/.a/b", "a/b.c", "~", "/w/x*",
    ];
    for base in texts {
        for path in texts {
            for climbs in [false, true] {
                assert_eq!(
                    resolve(base, path, climbs),
                    fold(base, path, climbs),
                    "{base:?} {path:?} {climbs}"
                );
            }
        }
    }
}

#[test]
fn every_spelling_of_the_own_home_expands() {
    let home = Some("/home/agent");
    for p in [
        "~/.aws/credentials",
        "$HOME/.aws/credentials",
        "${HOME}/.aws/credentials",
        "~agent/.aws/credentials",
    ] {
        assert_eq!(
            expand_home_spellings(p, home).as_deref(),
            Some("/home/agent/.aws/credentials"),
            "{p}"
        );
    }
    assert_eq!(
        expand_home_spellings("$HOME", home).as_deref(),
        Some("/home/agent")
    );
    // Other names stay as written, or are unknown.
    assert_eq!(
        expand_home_spellings("$HOMEDIR/x", home).as_deref(),
        Some("$HOMEDIR/x")
    );
    assert_eq!(expand_home_spellings("~agentx/x", home), None);
    assert_eq!(expand_home_spellings("~bob/x", home), None);
    assert_eq!(
        expand_home_spellings("src/x", home).as_deref(),
        Some("src/x")
    );
}
