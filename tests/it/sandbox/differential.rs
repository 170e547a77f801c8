//! The analyser against the shell that runs: for every command line in
//! the policy tables and a generated corpus, each simple command bash in
//! the sandbox image executes (program and arguments, after quote removal
//! and expansion) must be one the analyser named. Where the analyser calls
//! a line opaque it names no guarantee, and the line is only counted.
//!
//! How bash is watched without running anything: each line runs under the
//! agent shell (`warden_sandbox::AGENT_SHELL`, the very argv
//! `terminal_exec` uses) after a prelude that empties `PATH`, disables
//! every builtin (`enable -n`) and defines `command_not_found_handle`,
//! which bash calls with the argv of each command it cannot find — so
//! every simple command, builtins included, reaches the handler, which
//! appends it to a log instead of running it. Lines whose commands name a
//! path (`/bin/rm`, `./x`), which bash would run without a lookup, or set
//! `PATH`, are left out: the handler would never see them.

use std::fmt::Write as _;

use serde_json::json;
use warden_api::FsAccess;
use warden_sandbox::SandboxConfig;
use warden_shell::CommandLine;

use super::corpus::{Rng, generate, table_lines};
use super::rig_with;

/// Lines the generator writes (a fixed seed: every run checks the same).
const GENERATED: usize = 2600;
/// Lines that must be checked strictly (not opaque, not left out).
const MIN_CHECKED: usize = 2000;

#[tokio::test(flavor = "multi_thread")]
async fn every_command_bash_runs_is_one_the_analyser_named() {
    let mut lines = table_lines();
    let from_tables = lines.len();
    let mut rng = Rng(0x5eed_2026_1124);
    lines.extend((0..GENERATED).map(|_| generate(&mut rng)));

    let mut checked: Vec<(usize, Vec<Vec<Option<String>>>)> = Vec::new();
    let (mut opaque, mut left_out) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        let parsed = CommandLine::parse(line);
        if parsed.is_opaque() {
            opaque += 1;
            continue;
        }
        let named = named(&parsed);
        if !watchable(line, &named) {
            left_out += 1;
            continue;
        }
        checked.push((i, named));
    }
    assert!(
        checked.len() >= MIN_CHECKED,
        "only {} lines checked ({opaque} opaque, {left_out} left out): the corpus must give at least {MIN_CHECKED}",
        checked.len()
    );

    let config = SandboxConfig {
        max_timeout_secs: 1800,
        ..SandboxConfig::default()
    };
    let r = rig_with("differential", config, FsAccess::ReadWrite, &[], "").await;
    let dir = r.dir.path().join("diff");
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let mut input = Vec::new();
    for (i, _) in &checked {
        input.extend_from_slice(lines[*i].as_bytes());
        input.push(0);
    }
    std::fs::write(dir.join("lines"), input).unwrap();
    std::fs::write(dir.join("prelude"), PRELUDE).unwrap();
    make_writable(&dir);
    let out = r
        .call(
            "terminal_exec",
            json!({"command": harness(), "timeout_secs": 1800}),
        )
        .await;
    let data = crate::common::data(&out);
    assert_eq!(
        data["stdout"].as_str().unwrap_or_default().trim(),
        format!("ran {}", checked.len()),
        "the harness ran every line: {data}"
    );

    let mut failures = String::new();
    let mut failed = 0;
    for (n, (i, named)) in checked.iter().enumerate() {
        let log = std::fs::read(dir.join("out").join(n.to_string())).unwrap_or_default();
        for ran in records(&log) {
            if !named.iter().any(|argv| matches(argv, &ran)) {
                failed += 1;
                if failed <= 25 {
                    let _ = writeln!(
                        failures,
                        "line {:?}\n  bash ran {ran:?}\n  the analyser named {named:?}",
                        lines[*i]
                    );
                }
            }
        }
    }
    r.done().await;
    assert!(
        failed == 0,
        "{failed} commands ran that the analyser did not name ({} lines checked: {from_tables} from the tables, \
         the rest generated; {opaque} opaque, {left_out} left out):\n{failures}",
        checked.len()
    );
}

/// Runs before each line: nothing is found, nothing is built in, and the
/// handler logs each command's argv (count first, NUL-separated). It
/// fails, so loops end; it uses no builtin (a disabled `return` would
/// call the handler again).
const PRELUDE: &str =
    "command_not_found_handle() { /usr/bin/printf '%s\\0' \"$#\" \"$@\" >> \"$W_OUT\"; (( 0 )); }
PATH=/nonexistent
enable -n $(compgen -b)
";

/// Runs every line in a fresh empty directory (globs match nothing there)
/// under the agent shell, each bounded by a timeout.
fn harness() -> String {
    let shell = warden_sandbox::AGENT_SHELL.join(" ");
    format!(
        "set -u\nd=/workspace/diff\nprelude=$(cat $d/prelude)\nbase=$(mktemp -d)\ni=0\n\
         while IFS= read -r -d '' line; do\n\
           mkdir \"$base/$i\" && cd \"$base/$i\" || exit 1\n\
           W_OUT=$d/out/$i timeout -s KILL 3 {shell} \"$prelude\"$'\\n'\"$line\" </dev/null >/dev/null 2>&1\n\
           i=$((i+1))\n\
         done < $d/lines\necho \"ran $i\"\n"
    )
}

fn make_writable(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for d in [dir.to_path_buf(), dir.join("out")] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
}

/// Every simple command the analyser names, nested text included.
fn named(line: &CommandLine<'_>) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    collect(line, &mut out);
    out
}

fn collect(line: &CommandLine<'_>, out: &mut Vec<Vec<Option<String>>>) {
    for sub in line.subcommands() {
        let argv: Vec<Option<String>> = sub
            .argv()
            .into_iter()
            .map(|w| w.map(str::to_owned))
            .collect();
        if !argv.is_empty() {
            out.push(argv);
        }
        for n in sub.nested() {
            collect(n, out);
        }
    }
}

/// Whether the handler sees every command of the line: each program is
/// looked up by name, and nothing resets `PATH` or the handler.
fn watchable(line: &str, named: &[Vec<Option<String>>]) -> bool {
    !line.contains('\0')
        && !line.contains("PATH")
        && !line.contains("W_OUT")
        && !line.contains("command_not_found_handle")
        && named.iter().all(|argv| {
            argv.first()
                .is_some_and(|p| p.as_ref().is_some_and(|p| !p.contains('/')))
        })
}

/// The argvs in a handler log: a count, then that many NUL-ended strings.
fn records(log: &[u8]) -> Vec<Vec<String>> {
    let mut fields = log
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut out = Vec::new();
    while let Some(count) = fields.next() {
        let Ok(n) = count.parse::<usize>() else { break };
        out.push(fields.by_ref().take(n).collect());
    }
    out
}

/// `ran` is `named`, where a word known only at run time (a glob, `~`)
/// stands for one or more arguments.
fn matches(named: &[Option<String>], ran: &[String]) -> bool {
    match (named.split_first(), ran.split_first()) {
        (None, None) => true,
        (Some((Some(w), rest)), Some((r, ran_rest))) => w == r && matches(rest, ran_rest),
        (Some((None, rest)), Some(_)) => (1..=ran.len()).any(|k| matches(rest, &ran[k..])),
        _ => false,
    }
}

#[test]
fn the_matcher_and_the_log_reader_agree_with_the_harness_format() {
    let log = b"2\0echo\0a b\x001\0ls\0";
    assert_eq!(
        records(log),
        vec![
            vec!["echo".to_owned(), "a b".to_owned()],
            vec!["ls".to_owned()]
        ]
    );
    let named = vec![Some("ls".to_owned()), None, Some("-l".to_owned())];
    let ran = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(matches(&named, &ran(&["ls", "a", "b", "-l"])));
    assert!(!matches(&named, &ran(&["ls", "-l"])));
    assert!(!matches(&named, &ran(&["rm", "a", "-l"])));
}
