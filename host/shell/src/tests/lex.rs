//! Lexing: quote removal, escapes, comments, continuations, expansions, here-documents.

use super::{parse, texts, words};

fn one(s: &str) -> Vec<String> {
    let w = words(s);
    assert_eq!(w.len(), 1, "{s:?} gave {w:?}");
    w.into_iter().next().unwrap()
}

#[test]
fn quotes_are_removed() {
    assert_eq!(one("r'm' -rf /"), ["rm", "-rf", "/"]);
    assert_eq!(one(r#""rm" -rf /"#), ["rm", "-rf", "/"]);
    assert_eq!(one(r#""r""m" -rf /"#), ["rm", "-rf", "/"]);
    assert_eq!(one(r"\rm -rf /"), ["rm", "-rf", "/"]);
    assert_eq!(one(r"r\m -rf /"), ["rm", "-rf", "/"]);
    assert_eq!(one(r#"echo 'a b' "c d""#), ["echo", "a b", "c d"]);
    assert_eq!(one(r#"echo "a\"b\\c\$d\`e\x""#), ["echo", r#"a"b\c$d`e\x"#]);
    assert_eq!(one(r"echo 'a\b'"), ["echo", r"a\b"]);
    assert_eq!(one(r"echo a\ b"), ["echo", "a b"]);
    assert_eq!(one(r#"echo "" x"#), ["echo", "", "x"]);
}

#[test]
fn ansi_c_quotes_are_decoded() {
    assert_eq!(one(r"$'\x72\x6d' -rf /"), ["rm", "-rf", "/"]);
    assert_eq!(one(r"$'\162\155' -rf /"), ["rm", "-rf", "/"]);
    assert_eq!(one(r"$'r\u006d' x"), ["rm", "x"]);
    assert_eq!(one(r"echo $'a\nb' $'it\'s'"), ["echo", "a\nb", "it's"]);
    // Bash cuts at NUL.
    assert_eq!(one(r"$'rm\0zzz' x"), ["rm", "x"]);
    // Locale strings are double quotes.
    assert_eq!(one(r#"$"rm" x"#), ["rm", "x"]);
}

#[test]
fn line_continuations_and_comments() {
    assert_eq!(one("r\\\nm -rf /"), ["rm", "-rf", "/"]);
    assert_eq!(one("ls \\\n -la"), ["ls", "-la"]);
    assert_eq!(one("ls -la # rm -rf /"), ["ls", "-la"]);
    assert_eq!(one("ls a#b"), ["ls", "a#b"]);
    assert_eq!(words("# only a comment"), Vec::<Vec<String>>::new());
    assert_eq!(texts("ls # c\nrm -rf /"), ["ls", "rm -rf /"]);
    assert_eq!(one("echo '# not a comment'"), ["echo", "# not a comment"]);
}

#[test]
fn unterminated_quotes_take_the_rest_and_are_opaque() {
    let line = parse("echo 'abc; rm -rf /");
    assert_eq!(line.subcommands().len(), 1);
    assert_eq!(line.subcommands()[0].words(), ["echo", "abc; rm -rf /"]);
    assert!(
        line.opaque_reasons()
            .iter()
            .any(|r| r.contains("unterminated"))
    );
    assert!(parse("echo \"abc").is_opaque());
    assert!(parse("echo $(ls").is_opaque());
    assert!(parse("echo `ls").is_opaque());
    assert!(parse("echo ${x").is_opaque());
}

#[test]
fn brace_expansion_is_performed() {
    assert_eq!(one("{rm,-rf,/}"), ["rm", "-rf", "/"]);
    assert_eq!(one("echo a{b,c}d"), ["echo", "abd", "acd"]);
    assert_eq!(one("echo {a,b}{1,2}"), ["echo", "a1", "a2", "b1", "b2"]);
    assert_eq!(one("echo {a,{b,c}}"), ["echo", "a", "b", "c"]);
    assert_eq!(
        one("echo {1..3} {c..a}"),
        ["echo", "1", "2", "3", "c", "b", "a"]
    );
    assert_eq!(one("echo {01..03}"), ["echo", "01", "02", "03"]);
    assert_eq!(one("echo {1..7..3}"), ["echo", "1", "4", "7"]);
    // Not expansions.
    assert_eq!(
        one("find . -exec rm {} +"),
        ["find", ".", "-exec", "rm", "{}", "+"]
    );
    assert_eq!(
        one("echo {a} '{a,b}' \"{a,b}\" \\{a,b}"),
        ["echo", "{a}", "{a,b}", "{a,b}", "{a,b}"]
    );
    assert_eq!(one("echo ${x,y}"), ["echo", "${x,y}"]);
}

#[test]
fn huge_brace_expansion_is_opaque_not_expanded() {
    let line = parse("echo {1..100000}");
    assert_eq!(line.subcommands()[0].words().len(), 2);
    assert!(line.is_opaque());
    let text = "{a,b}".repeat(30);
    let line = parse(&text);
    assert!(line.is_opaque());
}

#[test]
fn expansions_are_kept_as_text() {
    assert_eq!(
        one("echo $HOME ${HOME} \"$HOME\" '$HOME'"),
        ["echo", "$HOME", "${HOME}", "$HOME", "$HOME"]
    );
    assert_eq!(one("echo $(date) `date`"), ["echo", "$(date)", "`date`"]);
    assert_eq!(one("echo \"$(echo \"a b\")\""), ["echo", "$(echo \"a b\")"]);
    assert_eq!(one("echo $"), ["echo", "$"]);
}

#[test]
fn redirections_are_not_words() {
    let line = parse("echo hi > out.txt 2>&1 < in.txt >> log 2>/dev/null &> all");
    let sub = &line.subcommands()[0];
    assert_eq!(sub.words(), ["echo", "hi"]);
    let r: Vec<(super::super::RedirectKind, Option<u32>, &str)> = sub
        .redirects()
        .iter()
        .map(|r| (r.kind, r.fd, r.target.as_str()))
        .collect();
    use super::super::RedirectKind::*;
    assert_eq!(
        r,
        [
            (Output, None, "out.txt"),
            (DupOutput, Some(2), "1"),
            (Input, None, "in.txt"),
            (Append, None, "log"),
            (Output, Some(2), "/dev/null"),
            (OutputAndError, None, "all"),
        ]
    );
    assert!(sub.redirects()[0].writes_file());
    assert!(!sub.redirects()[1].writes_file());
    assert_eq!(one("echo a>b"), ["echo", "a"]);
    assert_eq!(one("echo 2 > x"), ["echo", "2"]);
    assert_eq!(one("cat <<< 'here string'"), ["cat"]);
    let line = parse("cmd >| f <> g >&file");
    let sub = &line.subcommands()[0];
    let kinds: Vec<_> = sub.redirects().iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [Clobber, ReadWrite, DupOutput]);
    assert!(sub.redirects().iter().all(|r| r.writes_file()));
}

#[test]
fn here_document_bodies_are_not_commands() {
    let line = parse("cat <<'EOF'\nrm -rf /\nEOF\nls");
    assert_eq!(texts("cat <<'EOF'\nrm -rf /\nEOF\nls"), ["cat", "ls"]);
    assert!(!line.is_opaque());
    assert!(!super::deny("rm *", "cat <<'EOF'\nrm -rf /\nEOF\nls"));
    // Tab-stripping form, delimiter indented.
    assert_eq!(
        texts("cat <<-\"END\"\n\trm -rf /\n\tEND\necho done"),
        ["cat", "echo done"]
    );
    // Two here-documents on one line.
    assert_eq!(
        texts("cat <<'A' <<'B'\nrm x\nA\nrm y\nB\npwd"),
        ["cat", "pwd"]
    );
    // Unterminated body runs to the end.
    assert_eq!(texts("cat <<'EOF'\nrm -rf /"), ["cat"]);
}

#[test]
fn expanding_here_documents_are_opaque_and_searched() {
    let line = parse("cat <<EOF\nhello\nEOF");
    assert!(
        line.opaque_reasons()
            .iter()
            .any(|r| r.contains("here-document"))
    );
    let hidden = "cat <<EOF\n$(rm -rf /)\nEOF";
    assert!(super::deny("rm -rf *", hidden));
    assert!(super::breaker(hidden).is_some());
}

#[test]
fn assignments_and_fd_words() {
    let line = parse("FOO=bar A+=1 arr[0]=x cmd 3>f {fd}>g");
    let sub = &line.subcommands()[0];
    assert_eq!(sub.words(), ["FOO=bar", "A+=1", "arr[0]=x", "cmd"]);
    assert_eq!(sub.redirects().len(), 2);
    assert_eq!(sub.redirects()[0].fd, Some(3));
    assert!(sub.words.iter().take(3).all(|w| w.assignment));
    assert!(!sub.words[3].assignment);
    assert!(!parse("'FOO'=bar").subcommands()[0].words[0].assignment);
}

#[test]
fn never_panics_on_odd_input() {
    for s in [
        "",
        " ",
        "\\",
        "'",
        "\"",
        "$",
        "$(",
        "${",
        "`",
        "<(",
        ">(",
        "(((",
        ")))",
        "{",
        "}",
        "<<",
        "<<-",
        "<<<",
        ">&",
        "&>",
        "|&",
        ";;&",
        "$'",
        "$'\\",
        "$'\\x",
        "$'\\u",
        "$'\\c",
        "{,}",
        "{..}",
        "{a..}",
        "{1..-1}",
        "a=(",
        "f()",
        "function",
        "function f",
        "f(){",
        "case",
        "x\u{0}y",
        "é$'\\xff'",
        "2>",
        "9999999999>x",
        "{-9223372036854775808..9223372036854775807}",
    ] {
        let line = parse(s);
        let _ = line.opaque_reasons();
        let _ = super::super::matches_any("*", &line);
        let _ = super::super::allowed_by(&["*"], &line);
        let _ = super::super::is_read_only(&line, super::WS, super::WS, super::HOME);
        let _ = super::super::circuit_breaker(&line, super::WS, super::WS, super::HOME);
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let deep = format!("{}ls{}", "$(".repeat(5000), ")".repeat(5000));
    assert!(parse(&deep).is_opaque());
    let deep = format!("{}rm -rf /{}", "$(".repeat(10), ")".repeat(10));
    assert!(super::deny("rm -rf *", &deep));
    let backticks = format!("echo {}", "`".repeat(4000));
    let _ = parse(&backticks);
    let braces = format!("echo {}", "${".repeat(4000));
    assert!(parse(&braces).is_opaque());
    // (`((` opens an arithmetic command in bash, so the subshells here are not adjacent.)
    let subshells = format!("{}ls{}", "(:;".repeat(20000), ")".repeat(20000));
    assert!(!parse(&subshells).is_opaque());
    // Nested strings beyond the limit are reported, not parsed.
    let nested = format!("{}rm -rf /", "eval ".repeat(40));
    let line = parse(&nested);
    assert!(line.is_opaque());
    let nested = format!("{}rm -rf /", "eval ".repeat(10));
    assert!(super::deny("rm -rf *", &nested));
    let mut quoted = "rm -rf /".to_string();
    for _ in 0..6 {
        quoted = format!("bash -c '{}'", quoted.replace('\'', r"'\''"));
    }
    assert!(super::deny("rm -rf *", &quoted));
    assert!(super::breaker(&quoted).is_some());
}

proptest::proptest! {
    /// The shortcut for plain words reads them exactly as the character-by-character path does.
    #[test]
    fn plain_word_shortcut_agrees(s in "[a-zA-Z0-9_=+#!:,.%@/}\\]{}~*?$'\"\\\\ ;&|<>()-]{0,30}") {
        let budget = std::cell::Cell::new(1 << 20);
        let mut fast = crate::lex::Lexer::new(&s, 0, &budget);
        let mut slow = crate::lex::Lexer::new(&s, 0, &budget);
        let (a, b) = (fast.lex_word(), slow.built_word());
        proptest::prop_assert_eq!(format!("{a:?} {fast:?}"), format!("{b:?} {slow:?}"));
    }
}
