//! The analyser against the shell that runs: for every command line in
//! the policy tables, a generated corpus and a list of contexts where bash
//! evaluates quoted text ([`super::corpus::evaluated`]), each program bash
//! in the sandbox image starts (its argv, as `execve` received it) must be
//! one the analyser named, or its tail behind a wrapper the analyser
//! strips (`command rm x` execs `rm x`). Builtins bash runs in-process do
//! not show in the trace, which is fine: what ran must be a subset of what
//! was named. Where the analyser calls a line opaque it names no
//! guarantee, and the line is only counted (not run).
//!
//! How bash is watched: each line runs under the agent shell
//! (`warden_sandbox::AGENT_SHELL`, the very argv `terminal_exec` uses)
//! with every builtin enabled — bash evaluates array subscripts and
//! arithmetic inside builtins (`test -v 'a[$(id)]'`), so switching them
//! off would hide exactly that — under `strace -f -e trace=execve`, which
//! sees every program any process of the line starts, however it was
//! reached. ptrace was chosen over a seccomp logger or audit rules because
//! it needs no privilege in the hardened container (no capabilities,
//! no-new-privileges; Docker's default seccomp profile allows tracing
//! one's own children) and Debian packages it (`strace` is in the base
//! image for this test).
//!
//! What keeps a generated, possibly destructive line harmless: `PATH`
//! holds only `bash` and `sh`, and `command_not_found_handle` (exported,
//! so child shells have it too) turns every other command into an
//! `execve` of `/usr/bin/false` with the command's argv — the trace shows
//! the command, nothing runs, and a loop on a missing command ends.
//! Programs named by a path (`/bin/rm -rf build`) really run; they are
//! kept (the tables have only harmless ones), because each line runs as
//! the agent user in a fresh directory on the container's tmpfs, in a
//! container with a read-only root that the test removes — a line that
//! harmed the harness's own files would fail the test, not pass it. The
//! `kill` builtin alone stays disabled (it then goes through the handler
//! like any command): `kill 1` would end the container's init, which runs
//! as the agent user.
//!
//! Most evaluated-context lines are unread by the analyser (a subscript
//! or prompt whose `$(...)` runs later), hence opaque and not run here:
//! the policy never makes them read-only and asks for them in autonomous
//! mode. The ones it does read (a trap handler, `mapfile -C`) must name
//! what bash runs, like every other line.

use std::fmt::Write as _;

use warden_api::{Effects, FsAccess, Grants};
use warden_sandbox::SandboxConfig;
use warden_shell::CommandLine;

use super::corpus::{Rng, evaluated, generate, probe, table_lines};
use super::{rig_with, ws_grant};

/// Lines the generator writes (a fixed seed: every run checks the same).
const GENERATED: usize = 2900;
/// Lines that must be checked strictly (not opaque).
const MIN_CHECKED: usize = 2000;
/// Seconds a line may run (a loop on a builtin that holds runs forever).
const LINE_SECS: u32 = 3;

#[tokio::test(flavor = "multi_thread")]
async fn every_command_bash_runs_is_one_the_analyser_named() {
    let mut lines = table_lines();
    let from_tables = lines.len();
    let mut rng = Rng(0x5eed_2026_1124);
    lines.extend((0..GENERATED).map(|_| generate(&mut rng)));
    let first_evaluated = lines.len();
    lines.extend(evaluated());

    let mut checked: Vec<(usize, Vec<Named>)> = Vec::new();
    let mut opaque = 0;
    for (i, line) in lines.iter().enumerate() {
        // The harness reads lines NUL-separated.
        assert!(!line.contains('\0'), "a line with a NUL: {line:?}");
        let parsed = CommandLine::parse(line);
        if parsed.is_opaque() {
            opaque += 1;
            continue;
        }
        checked.push((i, named(&parsed)));
    }
    assert!(
        checked.len() >= MIN_CHECKED,
        "only {} lines checked ({opaque} opaque): the corpus must give at least {MIN_CHECKED}",
        checked.len()
    );

    // A worker per core, up to two: the lines are independent, and the
    // tracer roughly doubles what each costs.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let config = SandboxConfig {
        max_timeout_secs: 1800,
        cpu_millis: 1000 * workers as u64,
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
    let started = std::time::Instant::now();
    // The harness names its files through variables, which the analyser
    // cannot read: it is the test's own line, run as an allowed call.
    let grants = Grants {
        fs: vec![ws_grant(r.dir.path(), FsAccess::ReadWrite)],
        ..Grants::default()
    };
    let data = r
        .direct(&grants, Effects::Unattended, &harness(workers))
        .await;
    let stdout = data["stdout"].as_str().unwrap_or_default().trim();
    assert!(
        stdout.starts_with(&format!("ran {} ", checked.len())),
        "the harness ran every line: {data}"
    );
    eprintln!(
        "{} lines traced in {:.1?} ({stdout})",
        checked.len(),
        started.elapsed()
    );

    let shell: Vec<String> = warden_sandbox::AGENT_SHELL
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut report = Report::default();
    for (n, (i, named)) in checked.iter().enumerate() {
        let line = &lines[*i];
        let log = std::fs::read(dir.join("out").join(n.to_string())).unwrap_or_default();
        let execs = execs(&log);
        // What the line ran: everything after the agent shell started.
        let Some(start) = execs
            .iter()
            .position(|argv| argv.len() == shell.len() + 1 && argv.starts_with(&shell))
        else {
            report.blind.push(line.clone());
            continue;
        };
        let ran = &execs[start + 1..];
        let missed: Vec<&Vec<String>> = ran
            .iter()
            .filter(|argv| !named.iter().any(|n| n.ran(argv)))
            .collect();
        if *i >= first_evaluated {
            let p = probe(*i - first_evaluated);
            if !ran.iter().any(|argv| argv.first() == Some(&p)) {
                report.dead.push(line.clone());
            }
        }
        if !missed.is_empty() {
            report.misses.push(format!(
                "line {line:?}\n  bash ran {missed:?}\n  the analyser named {named:?}"
            ));
        }
    }
    r.done().await;
    let mut failures = String::new();
    if !report.misses.is_empty() {
        let _ = writeln!(
            failures,
            "{} lines ran commands the analyser did not name:",
            report.misses.len()
        );
        for m in &report.misses {
            let _ = writeln!(failures, "{m}");
        }
    }
    if !report.blind.is_empty() {
        let _ = writeln!(
            failures,
            "the tracer did not see the agent shell start for {} lines, e.g. {:?}",
            report.blind.len(),
            &report.blind[..report.blind.len().min(5)]
        );
    }
    if !report.dead.is_empty() {
        let _ = writeln!(
            failures,
            "evaluated-context lines whose probe never showed in the trace: {:?}",
            report.dead
        );
    }
    assert!(
        failures.is_empty(),
        "{} lines checked ({from_tables} from the tables, {GENERATED} generated, {} evaluated contexts; \
         {opaque} opaque):\n{failures}",
        checked.len(),
        lines.len() - first_evaluated
    );
}

#[derive(Default)]
struct Report {
    /// Lines that ran a program the analyser did not name.
    misses: Vec<String>,
    /// Lines whose trace does not show the agent shell starting.
    blind: Vec<String>,
    /// Evaluated-context lines whose probe did not run.
    dead: Vec<String>,
}

/// Runs before each line. `false` rather than `true`, so a loop on a
/// missing command ends; `builtin exec` in case the line defines `exec`.
const PRELUDE: &str =
    "command_not_found_handle() { builtin exec -a \"$1\" /usr/bin/false \"${@:2}\"; }
export -f command_not_found_handle
PATH=$W_STUBS
unset W_STUBS
enable -n kill
";

/// Runs every line under the tracer, in a fresh empty directory (globs
/// match nothing there) under the agent shell, each bounded by a timeout
/// that kills the line's whole process group (strace then exits with it),
/// `workers` lines at a time. `-z` keeps only execs that succeeded (a
/// failed one ran nothing; bash's own PATH search never calls execve for
/// a missing program), `-xx` writes every string in hex so the log parses
/// without ambiguity, and `--seccomp-bpf` stops the tracees only at
/// execve, which keeps the tracer's cost near that of the processes.
fn harness(workers: usize) -> String {
    let shell = warden_sandbox::AGENT_SHELL.join(" ");
    format!(
        "set -u\nd=/workspace/diff\nprelude=$(cat $d/prelude)\n\
         stubs=$(mktemp -d) && ln -s \"$(command -v bash)\" \"$(command -v sh)\" \"$stubs/\" || exit 1\n\
         base=$(mktemp -d)\n\
         worker() {{\n\
           i=0; slow=0\n\
           while IFS= read -r -d '' line; do\n\
             if [ $((i % {workers})) -eq $1 ]; then\n\
               mkdir \"$base/$i\" && cd \"$base/$i\" || exit 1\n\
               W_STUBS=$stubs strace -f -z -qq -xx -s 1048576 --seccomp-bpf -e trace=execve -e signal=none \
                 -o $d/out/$i timeout -s KILL {LINE_SECS} {shell} \"$prelude\"$'\\n'\"$line\" \
                 </dev/null >/dev/null 2>&1\n\
               [ $? -eq 137 ] && slow=$((slow+1))\n\
             fi\n\
             i=$((i+1))\n\
           done < $d/lines\n\
           echo \"$i $slow\" > $d/worker.$1\n\
         }}\n\
         for k in $(seq 0 $(({workers} - 1))); do worker $k & done\nwait\n\
         cat $d/worker.* | {{ n=0; s=0; while read a b; do n=$a; s=$((s+b)); done; \
           echo \"ran $n lines, $s stopped after {LINE_SECS} s\"; }}\n"
    )
}

fn make_writable(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for d in [dir.to_path_buf(), dir.join("out")] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
}

/// A simple command the analyser names: its argv, and whether it saw a
/// wrapper in front (`command`, `sudo`, `timeout`, ...).
#[derive(Debug)]
struct Named {
    argv: Vec<Option<String>>,
    wrapped: bool,
}

impl Named {
    /// Whether `ran` is this command: its argv, or — behind a wrapper,
    /// which a builtin wrapper (`command rm x`) strips in-process, so
    /// only the rest is exec'd — the argv from a later word on.
    fn ran(&self, ran: &[String]) -> bool {
        let starts = if self.wrapped { self.argv.len() } else { 1 };
        (0..starts).any(|k| matches(&self.argv[k..], ran))
    }
}

/// Every simple command the analyser names, nested text included.
fn named(line: &CommandLine<'_>) -> Vec<Named> {
    let mut out = Vec::new();
    collect(line, &mut out);
    out
}

fn collect(line: &CommandLine<'_>, out: &mut Vec<Named>) {
    for sub in line.subcommands() {
        let argv: Vec<Option<String>> = sub
            .argv()
            .into_iter()
            .map(|w| w.map(str::to_owned))
            .collect();
        if !argv.is_empty() {
            out.push(Named {
                argv,
                wrapped: !sub.wrappers().is_empty(),
            });
        }
        for n in sub.nested() {
            collect(n, out);
        }
    }
}

/// The argv of each execve in an strace log written with `-xx`: lines
/// such as `12 execve("\x2f...", ["\x6c\x73", "\x2d\x6c"], 0x7ff.. /* 9 vars */) = 0`.
/// A resumed call (`<... execve resumed>`) prints no arguments again.
fn execs(log: &[u8]) -> Vec<Vec<String>> {
    let text = String::from_utf8_lossy(log);
    text.lines().filter_map(exec_argv).collect()
}

fn exec_argv(line: &str) -> Option<Vec<String>> {
    let rest = &line[line.find("execve(\"")? + "execve(\"".len()..];
    let rest = &rest[rest.find('"')? + 1..];
    let mut rest = rest.strip_prefix(", [")?;
    let mut argv = Vec::new();
    while let Some(s) = rest.strip_prefix('"') {
        let end = s.find('"')?;
        argv.push(unhex(&s[..end])?);
        rest = &s[end + 1..];
        rest = rest.strip_prefix(", ").unwrap_or(rest);
    }
    rest.starts_with(']').then_some(argv)
}

/// `\x6c\x73` -> `ls`.
fn unhex(s: &str) -> Option<String> {
    let bytes = s
        .split("\\x")
        .skip(1)
        .map(|h| u8::from_str_radix(h, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
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
fn the_matcher_and_the_log_reader_agree_with_strace() {
    let log = b"7 execve(\"\\x2f\\x62\", [\"\\x6c\\x73\", \"\", \"\\x61\\x20\\x62\"], 0x7ffe /* 3 vars */) = 0\n\
                8 <... execve resumed>) = 0\n\
                9 execve(\"\\x2f\", [], 0x1 /* 0 vars */) = 0\n";
    assert_eq!(
        execs(log),
        vec![
            vec!["ls".to_owned(), String::new(), "a b".to_owned()],
            Vec::new()
        ]
    );
    let named = vec![Some("ls".to_owned()), None, Some("-l".to_owned())];
    let ran = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(matches(&named, &ran(&["ls", "a", "b", "-l"])));
    assert!(!matches(&named, &ran(&["ls", "-l"])));
    assert!(!matches(&named, &ran(&["rm", "a", "-l"])));
    let wrapped = |wrapped| Named {
        argv: vec![Some("command".to_owned()), Some("rm".to_owned()), None],
        wrapped,
    };
    assert!(wrapped(true).ran(&ran(&["rm", "x"])));
    assert!(wrapped(true).ran(&ran(&["command", "rm", "x"])));
    assert!(!wrapped(false).ran(&ran(&["rm", "x"])));
}
