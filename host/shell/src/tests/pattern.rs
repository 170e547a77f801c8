//! Pattern semantics: word boundaries, trailing ` *`, in-word globs, whitespace, quoting.

use super::super::Pattern;
use super::{allow, deny};

#[test]
fn trailing_star_means_these_words_then_anything() {
    assert!(allow(&["npm run *"], "npm run build"));
    assert!(allow(&["npm run *"], "npm run build --watch"));
    assert!(allow(&["npm run *"], "npm run"));
    assert!(!allow(&["npm run *"], "npm runner"));
    assert!(!allow(&["npm run *"], "npm"));
    assert!(allow(&["ls *"], "ls"));
    assert!(allow(&["ls *"], "ls -la"));
    assert!(!allow(&["ls *"], "lsblk"));
}

#[test]
fn claude_code_colon_star_suffix() {
    assert!(allow(&["npm run test:*"], "npm run test"));
    assert!(allow(&["npm run test:*"], "npm run test --watch"));
    assert!(!allow(&["npm run test:*"], "npm run tests"));
}

#[test]
fn no_star_is_exact() {
    assert!(allow(&["git status"], "git status"));
    assert!(!allow(&["git status"], "git status --short"));
    assert!(!allow(&["npm run"], "npm run build"));
    assert!(allow(&["npm run"], "npm run"));
}

#[test]
fn star_inside_a_word_globs_onwards() {
    assert!(allow(&["git check*"], "git checkout main"));
    assert!(allow(&["git check*"], "git check"));
    assert!(!allow(&["git check*"], "git chec"));
    assert!(allow(&["git * --dry-run"], "git push origin --dry-run"));
    assert!(!allow(&["git * --dry-run"], "git push origin"));
    assert!(allow(&["*"], "anything at all"));
}

#[test]
fn whitespace_is_normalised() {
    assert!(allow(&["  npm   run   * "], "npm    run\tbuild"));
    assert!(deny("rm  -rf  *", "rm    -rf   /"));
}

#[test]
fn quoting_in_commands_does_not_fool_matching() {
    assert!(deny("rm -rf *", "r'm' -rf /"));
    assert!(deny("rm -rf *", "\"rm\" -rf /"));
    assert!(deny("rm -rf *", "\\rm -rf /"));
    assert!(deny("rm -rf *", "\"r\"\"m\" -rf /"));
    // For allow, one quoted word is not two words.
    assert!(!allow(&["npm run build"], "npm 'run build'"));
    assert!(!allow(&["git status"], "git \"\" status"));
    // For deny, it is read both ways.
    assert!(deny("rm -rf *", "rm '-rf /'"));
}

#[test]
fn pattern_quotes_and_escapes() {
    assert!(allow(
        &["git commit -m 'fix bug'"],
        "git commit -m \"fix bug\""
    ));
    assert!(!allow(
        &["git commit -m 'fix bug'"],
        "git commit -m fix bug"
    ));
    assert!(allow(&["echo \\*"], "echo '*'"));
    assert!(!allow(&["echo \\*"], "echo hi"));
    let p = Pattern::parse("ls *");
    assert!(p.has_wildcard());
    assert_eq!(p.as_str(), "ls *");
    assert!(!Pattern::parse("git status").has_wildcard());
}

#[test]
fn empty_pattern_matches_nothing() {
    assert!(!deny("", "ls"));
    assert!(!allow(&[""], "ls"));
    assert!(!allow(&[], "ls"));
}

#[test]
fn compiled_patterns_give_the_same_answers() {
    let line = super::parse("ls && npm run build");
    let ps = [Pattern::parse("ls *"), Pattern::parse("npm run *")];
    assert!(super::super::allowed_by_patterns(&ps, &line));
    let refs: Vec<&Pattern> = ps.iter().collect();
    assert!(super::super::allowed_by_patterns(&refs, &line));
    assert!(super::super::matches_any_pattern(
        &Pattern::parse("npm *"),
        &line
    ));
}

#[test]
fn a_decision_on_a_thousand_rules_is_fast() {
    let rules: Vec<Pattern> = (0..1000)
        .map(|i| Pattern::parse(&format!("tool{i} sub{i} *")))
        .collect();
    let line =
        super::parse("sudo timeout 5 nice -n 5 git push origin main --force && ls -la | grep x");
    let start = std::time::Instant::now();
    let runs = 20;
    for _ in 0..runs {
        assert!(
            !rules
                .iter()
                .any(|r| super::super::matches_any_pattern(r, &line))
        );
        assert!(!super::super::allowed_by_patterns(&rules, &line));
    }
    let per = start.elapsed() / runs;
    // Generous for unoptimised debug builds on a busy machine.
    assert!(
        per < std::time::Duration::from_millis(20),
        "{per:?} per decision"
    );
}
