use super::*;

const ENV: PathEnv<'static> = PathEnv {
    workspace: "/work/proj",
    cwd: "/work/proj/src",
    home: "/home/agent",
};

fn m(pattern: &str, path: &str) -> bool {
    PathPattern::parse(pattern).matches(path, &ENV)
}

#[test]
fn normalisation_removes_tricks() {
    assert_eq!(normalize("a/../b", "/w").unwrap(), "/w/b");
    assert_eq!(normalize("//etc//passwd", "/w").unwrap(), "/etc/passwd");
    assert_eq!(normalize("./x/./y/", "/w").unwrap(), "/w/x/y");
    assert_eq!(normalize("../../../../etc", "/w/a").unwrap(), "/etc");
    assert_eq!(normalize("/", "/w").unwrap(), "/");
    assert!(normalize("a\0b", "/w").is_err());
}

#[test]
fn anchors() {
    assert!(m("//etc/**", "/etc/passwd"));
    assert!(m("~/.ssh/**", "/home/agent/.ssh/id_rsa"));
    assert!(m("/secrets/**", "/work/proj/secrets/key"));
    assert!(!m("/secrets/**", "/secrets/key"));
    assert!(m("./lib.rs", "/work/proj/src/lib.rs"));
    assert!(m("sub/*.rs", "/work/proj/src/sub/a.rs"));
    assert!(m("*.env", "/work/proj/deep/down/prod.env"));
    assert!(m(".env", "/work/proj/.env"));
    assert!(!m("*.env", "/work/proj/env.txt"));
}

/// Attack: a deny rule on `secrets/**` walked around by a deeper copy
/// (`a/b/secrets/x`): an unanchored pattern with several segments matches
/// at any depth, as a single-segment one does; anchored ones stay put.
#[test]
fn unanchored_multi_segment_patterns_match_at_any_depth() {
    for (pattern, path) in [
        ("secrets/**", "/work/proj/secrets/x"),
        ("secrets/**", "/work/proj/a/b/secrets/x"),
        ("secrets/**", "/tmp/secrets/x"),
        ("a/b", "/work/proj/deep/a/b"),
        ("a/b", "/work/proj/deep/a/b/c"),
        ("config/*.key", "/work/proj/x/config/prod.key"),
    ] {
        assert!(m(pattern, path), "{pattern} should match {path}");
    }
    for (pattern, path) in [
        ("a/b", "/work/proj/a/x/b"),
        ("config/*.key", "/work/proj/config/sub/prod.key"),
        // Anchored patterns stay anchored.
        ("/secrets/**", "/work/proj/a/secrets/x"),
        ("./secrets/**", "/work/proj/src/a/secrets/x"),
        ("//secrets/**", "/work/proj/secrets/x"),
        ("~/secrets/**", "/work/proj/secrets/x"),
    ] {
        assert!(!m(pattern, path), "{pattern} should not match {path}");
    }
    assert!(m("./secrets/**", "/work/proj/src/secrets/x"));
}

/// An allow rule is not widened by the any-depth reading: `sub/**` still
/// covers only what lies below the working directory.
#[test]
fn allow_rules_read_multi_segment_patterns_from_the_working_directory() {
    let covers = |pattern: &str, path: &str| PathPattern::parse(pattern).covers(path, &ENV);
    assert!(covers("sub/**", "/work/proj/src/sub/a.rs"));
    assert!(covers("sub/*.rs", "/work/proj/src/sub/a.rs"));
    assert!(!covers("sub/**", "/work/proj/src/x/sub/a.rs"));
    assert!(!covers("sub/**", "/etc/sub/a"));
    assert!(
        m("sub/**", "/etc/sub/a"),
        "while a deny reads it at any depth"
    );
    // Single-segment and anchored patterns cover as they match.
    assert!(covers("*.rs", "/work/proj/deep/a.rs"));
    assert!(covers("/src/**", "/work/proj/src/a.rs"));
    assert!(covers("./a.rs", "/work/proj/src/a.rs"));
}

#[test]
fn globs_stay_in_segments_and_double_star_spans() {
    assert!(m("/src/*.rs", "/work/proj/src/a.rs"));
    assert!(!m("/src/*.rs", "/work/proj/src/sub/a.rs"));
    assert!(m("/src/**/*.rs", "/work/proj/src/sub/deeper/a.rs"));
    assert!(m("/src/**/*.rs", "/work/proj/src/a.rs"));
    assert!(m("/**", "/work/proj/anything/at/all"));
}

#[test]
fn a_directory_covers_its_contents() {
    assert!(m("/secrets", "/work/proj/secrets/key"));
    assert!(m("//etc", "/etc/ssh/sshd_config"));
    assert!(!m("/secrets", "/work/proj/secrets2/key"));
}
