//! Wrappers: programs that run another program named in their arguments (`sudo`, `timeout 5`,
//! `env X=1`, `xargs`, ...).
//!
//! A deny rule for `rm -rf *` must fire on `sudo timeout 5 nice -n 5 rm -rf /`, so for deny and
//! ask every wrapper is seen through, with its options and their arguments skipped. Where a
//! wrapper's option is unknown, both readings (with and without an argument) are kept: a deny
//! rule seeing too much only asks a person, a deny rule seeing too little lets damage through.
//! For allow, only wrappers that change nothing about what the command can do are stripped, and
//! only when their options are fully understood; `sudo ls` is not `ls`.

use super::inline::Starts;
use super::lex::Word;

/// The program a command word names: its last path component, so `/bin/rm` is `rm`.
pub(crate) fn program_name(text: &str) -> &str {
    // A plain loop: command words are short, and this runs several times per subcommand.
    match text.bytes().rposition(|b| b == b'/') {
        Some(at) => match text.get(at + 1..) {
            Some(base) if !base.is_empty() => base,
            _ => text,
        },
        None => text,
    }
}

/// For allow rules: a program in a system directory is that program (`/usr/bin/ls` is `ls`),
/// but `./ls` or `/tmp/x/ls` is not, since anyone may have put a file there.
pub(crate) fn system_program(text: &str) -> &str {
    for dir in ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/"] {
        if let Some(rest) = text.strip_prefix(dir)
            && !rest.is_empty()
            && !rest.contains('/')
        {
            return rest;
        }
    }
    text
}

/// How a wrapper's arguments are laid out.
#[derive(Debug, Clone, Copy)]
struct Spec {
    /// Short options that take an argument.
    arg_short: &'static str,
    /// Short options that take none.
    noarg_short: &'static str,
    /// Short options after which no command is run (`command -v`).
    stop_short: &'static str,
    arg_long: &'static [&'static str],
    noarg_long: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`, `chroot DIR`).
    positional: usize,
    /// `-10` is an option (`nice -10`).
    numeric: bool,
    /// The positional operand must look like a duration (allow only).
    duration: bool,
}

const NONE: Spec = Spec {
    arg_short: "",
    noarg_short: "",
    stop_short: "",
    arg_long: &[],
    noarg_long: &[],
    positional: 0,
    numeric: false,
    duration: false,
};

const TIMEOUT: Spec = Spec {
    arg_short: "sk",
    noarg_short: "v",
    arg_long: &["--signal", "--kill-after"],
    noarg_long: &["--preserve-status", "--foreground", "--verbose"],
    positional: 1,
    duration: true,
    ..NONE
};
const NICE: Spec = Spec {
    arg_short: "n",
    arg_long: &["--adjustment"],
    numeric: true,
    ..NONE
};
const STDBUF: Spec = Spec {
    arg_short: "ioe",
    arg_long: &["--input", "--output", "--error"],
    ..NONE
};

/// Wrappers stripped for allow rules: they limit or time a command but give it no new power.
fn allow_spec(prog: &str) -> Option<Spec> {
    Some(match prog {
        "timeout" => TIMEOUT,
        "nice" => NICE,
        "nohup" => NONE,
        "time" => Spec {
            noarg_short: "p",
            ..NONE
        },
        "stdbuf" => STDBUF,
        _ => return None,
    })
}

/// Wrappers seen through for deny and ask rules.
fn deny_spec(prog: &str) -> Option<Spec> {
    Some(match prog {
        "sudo" => Spec {
            arg_short: "ughpCrtTUDR",
            noarg_short: "AbEHiKklnPSsVve",
            arg_long: &[
                "--user",
                "--group",
                "--host",
                "--prompt",
                "--close-from",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--chdir",
                "--chroot",
            ],
            noarg_long: &[
                "--askpass",
                "--background",
                "--preserve-env",
                "--edit",
                "--set-home",
                "--login",
                "--remove-timestamp",
                "--reset-timestamp",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--shell",
                "--list",
                "--validate",
            ],
            ..NONE
        },
        "doas" => Spec {
            arg_short: "uC",
            noarg_short: "nsL",
            ..NONE
        },
        "pkexec" => Spec {
            arg_long: &["--user"],
            noarg_long: &["--keep-cwd", "--disable-internal-agent"],
            ..NONE
        },
        "timeout" => Spec {
            duration: false,
            ..TIMEOUT
        },
        "nice" => NICE,
        "ionice" => Spec {
            arg_short: "cnpPu",
            noarg_short: "t",
            arg_long: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            noarg_long: &["--ignore"],
            ..NONE
        },
        "nohup" | "builtin" | "busybox" | "noglob" | "nocorrect" | "eatmydata" | "catchsegv" => {
            NONE
        }
        "env" => Spec {
            arg_short: "uCS",
            noarg_short: "i0v",
            arg_long: &["--unset", "--chdir", "--split-string"],
            noarg_long: &["--ignore-environment", "--null", "--debug"],
            ..NONE
        },
        "command" => Spec {
            noarg_short: "p",
            stop_short: "vV",
            ..NONE
        },
        "exec" => Spec {
            arg_short: "a",
            noarg_short: "cl",
            ..NONE
        },
        "time" => Spec {
            arg_short: "fo",
            noarg_short: "pvaq",
            arg_long: &["--format", "--output"],
            noarg_long: &["--append", "--verbose", "--portability", "--quiet"],
            ..NONE
        },
        "stdbuf" => STDBUF,
        "setsid" => Spec {
            noarg_short: "cfw",
            noarg_long: &["--ctty", "--fork", "--wait"],
            ..NONE
        },
        "chrt" => Spec {
            arg_short: "T",
            noarg_short: "bfiordaemvR",
            stop_short: "p",
            positional: 1,
            ..NONE
        },
        "taskset" => Spec {
            noarg_short: "ac",
            stop_short: "p",
            positional: 1,
            ..NONE
        },
        "xargs" => Spec {
            arg_short: "adEILnPs",
            noarg_short: "0oprtxeil",
            arg_long: &[
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            noarg_long: &[
                "--null",
                "--open-tty",
                "--interactive",
                "--no-run-if-empty",
                "--verbose",
                "--exit",
                "--show-limits",
            ],
            ..NONE
        },
        "watch" => Spec {
            arg_short: "nq",
            noarg_short: "bcdeghprtwx",
            arg_long: &["--interval"],
            noarg_long: &[
                "--exec",
                "--differences",
                "--no-title",
                "--beep",
                "--errexit",
                "--chgexit",
                "--precise",
                "--color",
            ],
            ..NONE
        },
        "unbuffer" => Spec {
            noarg_short: "p",
            ..NONE
        },
        "flock" => Spec {
            arg_short: "wEc",
            noarg_short: "sxenuoFv",
            arg_long: &["--timeout", "--conflict-exit-code", "--command"],
            positional: 1,
            ..NONE
        },
        "chroot" => Spec {
            arg_long: &["--userspec", "--groups"],
            noarg_long: &["--skip-chdir"],
            positional: 1,
            ..NONE
        },
        "strace" | "ltrace" => Spec {
            arg_short: "abeEIoOpPsSuUX",
            noarg_short: "cCdDfFhiqrtTvVwxyz",
            ..NONE
        },
        // Options not modelled: every option is read both with and without an argument.
        "unshare" | "nsenter" | "firejail" | "fakeroot" | "proxychains" | "proxychains4"
        | "torsocks" | "valgrind" | "caffeinate" | "systemd-run" | "runuser" | "sg" => NONE,
        _ => return None,
    })
}

/// True for programs seen through as wrappers for deny and ask rules.
pub(crate) fn is_wrapper(prog: &str) -> bool {
    deny_spec(prog).is_some()
}

fn duration_like(t: &str) -> bool {
    let num = t.strip_suffix(['s', 'm', 'h', 'd']).unwrap_or(t);
    !num.is_empty()
        && num.chars().all(|c| c.is_ascii_digit() || c == '.')
        && num.chars().any(|c| c.is_ascii_digit())
}

/// Where the wrapped command may start, for the wrapper at word `at`. In strict mode (allow) an
/// unknown option means "not understood": the result is empty and nothing is stripped.
fn next_starts(words: &[Word], at: usize, spec: &Spec, strict: bool) -> Vec<usize> {
    let n = words.len();
    let mut out = Vec::new();
    let mut seen = vec![false; n + 2];
    let mut stack = vec![at + 1];
    while let Some(j) = stack.pop() {
        let Some(w) = words.get(j) else { continue };
        match seen.get_mut(j) {
            Some(s) if !*s => *s = true,
            _ => continue,
        }
        let t = w.text.as_ref();
        if t == "--" {
            out.push(j + 1 + spec.positional);
            continue;
        }
        if t.len() > 2 && t.starts_with("--") {
            let name = t.split('=').next().unwrap_or(t);
            if t.contains('=') || spec.noarg_long.contains(&name) {
                stack.push(j + 1);
            } else if spec.arg_long.contains(&name) {
                stack.push(j + 2);
            } else if strict {
                return Vec::new();
            } else {
                stack.push(j + 1);
                stack.push(j + 2);
            }
            continue;
        }
        if t == "-" {
            // `env -` is `env -i`; elsewhere a lone `-` would be an operand.
            stack.push(j + 1);
            continue;
        }
        if let Some(body) = t.strip_prefix('-')
            && !body.is_empty()
        {
            if spec.numeric && body.chars().all(|c| c.is_ascii_digit()) {
                stack.push(j + 1);
                continue;
            }
            let mut next = Some(j + 1);
            for (k, c) in body.char_indices() {
                if spec.stop_short.contains(c) {
                    next = None;
                    break;
                }
                if spec.arg_short.contains(c) {
                    let attached = k + c.len_utf8() < body.len();
                    next = Some(if attached { j + 1 } else { j + 2 });
                    break;
                }
                if spec.noarg_short.contains(c) {
                    continue;
                }
                if strict {
                    return Vec::new();
                }
                stack.push(j + 2);
                break;
            }
            if let Some(x) = next {
                stack.push(x);
            }
            continue;
        }
        if strict && spec.duration && !duration_like(t) {
            return Vec::new();
        }
        out.push(j + spec.positional);
    }
    out.retain(|&s| s < n);
    out
}

/// Deny view of the wrapper at `at`: where its command may start.
pub(crate) fn next_starts_deny(words: &[Word], at: usize) -> Vec<usize> {
    let prog = words.get(at).map(|w| program_name(&w.text)).unwrap_or("");
    match deny_spec(prog) {
        Some(spec) => next_starts(words, at, &spec, false),
        None => Vec::new(),
    }
}

/// True if the wrapper at `at` (`xargs`, `exec`) is given a command to run.
pub(crate) fn runs_command(words: &[Word], at: usize) -> bool {
    !next_starts_deny(words, at).is_empty()
}

/// Every word index where a command may start once any wrappers (and leading `NAME=value`
/// assignments) are stripped, including 0 (the unstripped form). Sorted.
pub(crate) fn deny_starts(words: &[Word]) -> Starts {
    // The common case: a command that is neither an assignment nor a wrapper.
    if let Some(w) = words.first()
        && !w.assignment
        && deny_spec(program_name(&w.text)).is_none()
    {
        return Starts::one(0);
    }
    let n = words.len();
    let mut visited = vec![false; n];
    let mut starts = Vec::new();
    let mut work = vec![0usize];
    while let Some(s) = work.pop() {
        match visited.get_mut(s) {
            Some(v) if !*v => *v = true,
            _ => continue,
        }
        starts.push(s);
        let Some(w) = words.get(s) else { continue };
        if w.assignment {
            work.push(s + 1);
            continue;
        }
        work.extend(next_starts_deny(words, s));
    }
    starts.sort_unstable();
    starts.into()
}

/// Word indices where the command starts once harmless wrappers are stripped: 0, then one more
/// per wrapper peeled off. Leading assignments are not stripped (`PATH=/tmp/x ls` is not `ls`).
pub(crate) fn allow_starts(words: &[Word]) -> Starts {
    let mut starts = Starts::default();
    if words.is_empty() {
        return starts;
    }
    starts.push(0);
    let mut s = 0;
    while let Some(w) = words.get(s) {
        if w.assignment || w.expands() || w.glob || w.brace {
            break;
        }
        let Some(spec) = allow_spec(system_program(&w.text)) else {
            break;
        };
        match next_starts(words, s, &spec, true).as_slice() {
            [next] if *next > s => {
                s = *next;
                starts.push(s);
            }
            _ => break,
        }
    }
    starts
}
