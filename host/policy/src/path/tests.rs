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
