//! Splitting into subcommands: separators, subshells, groups, keywords, functions.

use super::{parse, texts};

#[test]
fn every_separator_splits() {
    for sep in ["&&", "||", ";", "|", "|&", "&", "\n", " && ", " ;\n "] {
        assert_eq!(
            texts(&format!("ls{sep}rm -rf /")),
            ["ls", "rm -rf /"],
            "separator {sep:?}"
        );
    }
    assert_eq!(texts("a;b;;c"), ["a", "b", "c"]);
    assert_eq!(texts("a & b &"), ["a", "b"]);
}

#[test]
fn separators_inside_quotes_do_not_split() {
    assert_eq!(texts("echo 'a && b; c | d'"), ["echo a && b; c | d"]);
    assert_eq!(texts(r#"echo "a;b" a\;b"#), ["echo a;b a;b"]);
}

#[test]
fn subshells_and_groups_are_split_and_readable() {
    assert_eq!(texts("(cd /tmp && rm -rf x)"), ["cd /tmp", "rm -rf x"]);
    assert_eq!(texts("{ ls; rm -rf /; }"), ["ls", "rm -rf /"]);
    assert_eq!(
        texts("ls && (a; (b | c)) || { d; }"),
        ["ls", "a", "b", "c", "d"]
    );
    assert!(!parse("(ls) && { pwd; }").is_opaque());
    let line = parse("(ls) > out");
    assert_eq!(line.subcommands().len(), 2);
    assert_eq!(line.subcommands()[1].redirects()[0].target, "out");
}

#[test]
fn reserved_words_are_dropped() {
    assert_eq!(
        texts("if true; then rm -rf /; else ls; fi"),
        ["true", "rm -rf /", "ls"]
    );
    assert_eq!(
        texts("while read x; do rm \"$x\"; done"),
        ["read x", "rm $x"]
    );
    assert_eq!(texts("until false; do :; done"), ["false", ":"]);
    assert_eq!(texts("! rm -rf /"), ["rm -rf /"]);
    assert_eq!(
        texts("for f in a b; do rm $f; done"),
        ["for f in a b", "rm $f"]
    );
    // Quoted or not in command position, they are ordinary words.
    assert_eq!(texts("echo if then; 'if' x"), ["echo if then", "if x"]);
}

#[test]
fn for_headers_run_nothing() {
    let line = parse("for f in *.rs; do wc -l $f; done");
    assert!(line.subcommands()[0].noop);
    assert!(!line.subcommands()[1].noop);
}

#[test]
fn unbalanced_parentheses_are_opaque() {
    assert!(parse("ls )").is_opaque());
    assert!(parse("(ls").is_opaque());
    assert!(parse("ls (x)").is_opaque());
    assert!(parse("case $x in a) rm -rf /;; esac").is_opaque());
    assert!(super::deny("rm -rf *", "case $x in a) rm -rf /;; esac"));
}

#[test]
fn function_definitions_are_recorded_and_opaque() {
    let line = parse("f() { rm -rf /; }; f");
    assert!(line.is_opaque());
    assert_eq!(line.functions.len(), 1);
    assert_eq!(line.functions[0].name, "f");
    assert!(!line.functions[0].concurrent);
    assert!(super::deny("rm -rf *", "f() { rm -rf /; }; f"));
    let line = parse("function g { ls | ls & }; g");
    assert_eq!(line.functions[0].name, "g");
    assert!(line.functions[0].concurrent);
    let line = parse("function h () ( ls ); h");
    assert_eq!(line.functions[0].name, "h");
    assert_eq!(line.functions[0].body.len(), 1);
}
