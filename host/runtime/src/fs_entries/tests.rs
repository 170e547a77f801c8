use super::Entry;

fn split(path: &str) -> (&str, &str, &str) {
    let e = Entry::split(path);
    (e.parent, e.name, e.tail)
}

#[test]
fn a_path_splits_at_its_final_entry() {
    assert_eq!(split("a"), ("", "a", ""));
    assert_eq!(split("a/b/c"), ("a/b", "c", ""));
    assert_eq!(split("a/b/"), ("a", "b", "/"));
    assert_eq!(split("a//b"), ("a/", "b", ""));
    assert_eq!(split("/x"), ("/", "x", ""));
    assert_eq!(split(""), ("", "", ""));
}

#[test]
fn dots_and_trailing_slashes_are_never_new_files() {
    for path in ["", ".", "a/..", "/", "a/b/"] {
        assert!(Entry::split(path).is_special(), "{path}");
    }
    for path in ["", ".", "a/.."] {
        assert!(Entry::split(path).is_dot(), "{path}");
    }
    assert!(!Entry::split("a/b").is_special());
    assert!(!Entry::split("a/b/").is_dot());
}
